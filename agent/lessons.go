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

// RecallLessons asks host (journaled: a replay or a resumed run gets the
// lessons the run got) for the lessons of agents relevant to query.
func RecallLessons(ctx context.Context, host driver.Host, seq uint64, agents []string, query string, limit int) ([]string, error) {
	req, _ := json.Marshal(memory.LessonsRequest{Agents: agents, Query: query, Limit: limit})
	out, err := host.Do(ctx, driver.Call{Seq: seq, Driver: memory.Driver, Op: memory.OpLessons, Request: req})
	if err != nil {
		return nil, err
	}
	var a memory.LessonsAnswer
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
