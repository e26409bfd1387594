package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/memory"
)

// DistillPrompt is the system prompt of the distiller's one model call.
const DistillPrompt = `You distill a finished agent session into AT MOST 3 short, REUSABLE lessons: concrete tactics or gotchas that would help on a similar task next time (NOT a recap of what happened). One per line, imperative, at most 140 characters, no numbering. If nothing is genuinely reusable, answer with nothing.`

// MemoryDriver is the driver name of an agent run's memory calls (the
// lessons recalled into its prompt), journaled like its model calls.
const MemoryDriver = "memory"

// OpLessons is MemoryDriver's operation: LessonsRequest -> LessonsAnswer.
const OpLessons = "lessons"

// LessonsRequest asks for the lessons of Agents most relevant to Query.
type LessonsRequest struct {
	Agents []string `json:"agents"`
	Query  string   `json:"query"`
	Limit  int      `json:"limit"`
}

// LessonsAnswer is the lessons found, best first.
type LessonsAnswer struct {
	Lessons []string `json:"lessons"`
}

// minLessonScore is the score (0..1) a lesson needs to be recalled into a
// prompt: a lesson sharing one common word with the task is noise.
const minLessonScore = 0.2

// LessonsDevice answers OpLessons from store: the lessons (kind lesson) of
// the agents asked, merged by score, at least minLessonScore.
func LessonsDevice(store *memory.Store) driver.Device {
	return driver.DeviceFunc(func(_ context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		if op != OpLessons {
			return nil, driver.Errorf(driver.CodeUnsupported, "memory has no operation %q (use %q)", op, OpLessons)
		}
		var r LessonsRequest
		if err := json.Unmarshal(req, &r); err != nil {
			return nil, driver.Errorf(driver.CodeInvalid, "memory.lessons: bad request: %v", err)
		}
		var hits []memory.Hit
		for _, a := range r.Agents {
			h, err := store.Recall(a, r.Query, memory.RecallOptions{Limit: r.Limit, Kinds: []memory.Kind{memory.Lesson}})
			if err != nil {
				return nil, driver.Errorf(driver.CodeIO, "memory.lessons: %v", err)
			}
			hits = append(hits, h...)
		}
		out := LessonsAnswer{Lessons: []string{}}
		for len(out.Lessons) < r.Limit && len(hits) > 0 {
			best := 0
			for i := range hits {
				if hits[i].Score > hits[best].Score {
					best = i
				}
			}
			if hits[best].Score < minLessonScore {
				break
			}
			if !contains(out.Lessons, hits[best].Text) {
				out.Lessons = append(out.Lessons, hits[best].Text)
			}
			hits = append(hits[:best], hits[best+1:]...)
		}
		return json.Marshal(out)
	})
}

// RecallLessons asks host (journaled: a replay or a resumed run gets the
// lessons the run got) for the lessons of agents relevant to query.
func RecallLessons(ctx context.Context, host driver.Host, seq uint64, agents []string, query string, limit int) ([]string, error) {
	req, _ := json.Marshal(LessonsRequest{Agents: agents, Query: query, Limit: limit})
	out, err := host.Do(ctx, driver.Call{Seq: seq, Driver: MemoryDriver, Op: OpLessons, Request: req})
	if err != nil {
		return nil, err
	}
	var a LessonsAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, fmt.Errorf("memory.lessons: %w", err)
	}
	return a.Lessons, nil
}

// WithLessons is system with lessons appended as a list the model is told
// to apply when relevant (system unchanged when there are none).
func WithLessons(system string, lessons []string) string {
	if len(lessons) == 0 {
		return system
	}
	return system + "\n\nLessons from past work (apply when relevant):\n- " + strings.Join(lessons, "\n- ")
}

// Transcript is a finished run as text for the distiller: the task, each
// tool call with its outcome, the answer; at most the last 6000 bytes.
func Transcript(task string, res Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "task: %s\n", task)
	for _, c := range res.Calls {
		outcome := "ok"
		if c.Error != "" {
			outcome = "error: " + clipLine(c.Error, 300)
		}
		fmt.Fprintf(&b, "assistant called %s(%s) -> %s\n", c.Tool, clipLine(c.Arguments, 300), outcome)
	}
	fmt.Fprintf(&b, "ended: %s\n", res.Reason)
	if res.Answer != "" {
		fmt.Fprintf(&b, "answer: %s\n", clipLine(res.Answer, 1000))
	}
	s := b.String()
	if len(s) > 6000 {
		s = s[len(s)-6000:]
	}
	return s
}

// Distill turns a finished run's transcript into at most three lessons
// with one model call through host (journaled when host is a run's).
func Distill(ctx context.Context, host driver.Host, seq uint64, transcript string) ([]string, llm.Usage, error) {
	req, _ := json.Marshal(llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: DistillPrompt}, {Role: llm.RoleUser, Content: transcript}}, MaxTokens: 400})
	out, err := host.Do(ctx, driver.Call{Seq: seq, Driver: llm.Driver, Op: llm.OpComplete, Request: req})
	if err != nil {
		return nil, llm.Usage{}, fmt.Errorf("agent: distilling the run's lessons: %w", err)
	}
	var answer llm.Response
	if err := json.Unmarshal(out, &answer); err != nil {
		return nil, llm.Usage{}, fmt.Errorf("agent: distilling the run's lessons: %w", err)
	}
	return ParseLessons(answer.Message.Content), answer.Usage, nil
}

// ParseLessons reads a distiller's answer: one lesson a line, list marks
// and numbering removed, lines of 8 bytes or less dropped, at most three.
func ParseLessons(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimLeft(strings.TrimSpace(line), "-*•0123456789.) \t")
		line = strings.TrimSpace(line)
		if len(line) > 8 && len(out) < 3 {
			out = append(out, clipLine(line, 280))
		}
	}
	return out
}

// renumber gives the calls through it consecutive sequence numbers from 1:
// an agent run's lessons call, model requests and distillation share one
// sequence in its journal.
func renumber() driver.Middleware {
	var n atomic.Uint64
	return func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			c.Seq = n.Add(1)
			return next.Do(ctx, c)
		})
	}
}
