package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentos-run/agentos/driver/llm"
)

// Model retries: a transient model error (unreachable, 5xx, 429, timeout)
// is asked again, each try a journaled call of its own.
const (
	defaultModelRetries = 2
	retryBase           = time.Second
	maxRetryWait        = 30 * time.Second
)

// conversation is the forge's history with the model, kept small: only the
// latest candidate and its answers travel whole; earlier attempts travel as
// one line each (their errors), so a model with a small context window
// meets the same request size on attempt 3 as on attempt 2.
type conversation struct {
	system, spec string
	earlier      []string      // "attempt N: errors" of attempts before the latest
	last         []llm.Message // the latest assistant message and its answers
	lastSummary  string        // its line, once a newer attempt replaces it
}

func (c *conversation) messages(short bool) []llm.Message {
	user := "Write a tool for this spec:\n\n" + c.spec
	earlier, last := c.earlier, c.last
	if short && len(last) > 0 { // the context window refused the latest candidate whole
		earlier, last = append(append([]string(nil), earlier...), c.lastSummary), nil
	}
	if len(earlier) > 0 {
		user += "\n\nYour earlier attempts failed with these errors (do not repeat them):\n- " + strings.Join(earlier, "\n- ")
	}
	return append([]llm.Message{{Role: llm.RoleSystem, Content: c.system}, {Role: llm.RoleUser, Content: user}}, last...)
}

// failed records attempt n's answer and the messages answering it.
func (c *conversation) failed(n int, answer llm.Message, replies []llm.Message, errs []string) {
	if c.lastSummary != "" {
		c.earlier = append(c.earlier, c.lastSummary)
	}
	c.last = append([]llm.Message{answer}, replies...)
	c.lastSummary = fmt.Sprintf("attempt %d: %s", n, clip(strings.Join(errs, "; "), maxSummary))
}

const maxSummary = 600 // bytes of one earlier attempt's errors

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " ..."
}

// submission is what one model answer submitted: the candidate of its
// first submit_tool call (or of its JSON text), that call's id, and the
// refusals of every other call, each answered by its own tool message.
type submission struct {
	cand   candidate
	callID string
	others map[string]string // call id -> why it was not judged
	order  []string          // the other calls' ids, in the answer's order
	err    error
}

// readSubmission reads answer. The first submit_tool call is judged; every
// other call is answered with why it was not, so that the next request is
// valid (every tool call answered).
func readSubmission(answer llm.Response) submission {
	m := answer.Message
	s := submission{others: map[string]string{}}
	judged := -1
	for i, tc := range m.ToolCalls {
		if tc.Name == submitTool.Name && judged < 0 {
			judged = i
		}
	}
	if len(m.ToolCalls) > 0 && judged < 0 {
		judged = 0 // none is submit_tool: the first is answered with how to submit
	}
	for i, tc := range m.ToolCalls {
		if i == judged {
			continue
		}
		s.order = append(s.order, tc.ID)
		if tc.Name == submitTool.Name {
			s.others[tc.ID] = "not judged: only the first submit_tool call of an answer is judged; submit one tool at a time"
		} else {
			s.others[tc.ID] = fmt.Sprintf("there is no tool %q here: call submit_tool with path, code and tests", tc.Name)
		}
	}
	s.cand, s.callID, s.err = parseCandidate(m, judged)
	if s.err != nil && answer.CutOff() {
		s.err = fmt.Errorf("your answer was cut off at %d tokens (the max_tokens cap) before it was complete: submit a shorter tool and fewer, shorter tests", answer.Usage.CompletionTokens)
	}
	return s
}

// replies are the tool messages answering every call of the answer (the
// judged one with feedback), or one user message when it called nothing.
func (s submission) replies(feedback string) []llm.Message {
	if s.callID == "" {
		return []llm.Message{{Role: llm.RoleUser, Content: feedback}}
	}
	out := []llm.Message{{Role: llm.RoleTool, ToolCallID: s.callID, Content: feedback}}
	for _, id := range s.order {
		out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: s.others[id]})
	}
	return out
}

// stripFence removes one Markdown code fence around s (```ts ... ```),
// which models often put around code even inside a JSON argument.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return s
	}
	nl := strings.IndexByte(t, '\n')
	if nl < 0 {
		return s
	}
	body := strings.TrimSuffix(t[nl+1:], "```")
	if strings.Contains(body, "```") { // several blocks: not one fence around the code
		return s
	}
	return strings.TrimRight(body, " \t\r\n") + "\n"
}

// ask sends req to the model as journaled calls: a transient error is
// asked again up to retries times after a growing wait (the server's
// Retry-After when it sent one), and a request that does not fit the
// model's context window is sent again without the latest candidate.
func ask(ctx context.Context, call callFunc, conv *conversation, retries int, n int) (llm.Response, error) {
	var answer llm.Response
	short := false
	for try := 0; ; try++ {
		err := call(llm.Driver, llm.OpComplete, llm.Request{Messages: conv.messages(short), Tools: []llm.ToolSpec{submitTool}}, &answer)
		switch {
		case err == nil:
			return answer, nil
		case ctx.Err() != nil:
			return answer, ctx.Err()
		case llm.ContextExceeded(err) && !short && len(conv.last) > 0:
			short = true
		case llm.ContextExceeded(err):
			return answer, fmt.Errorf("forge attempt %d: the request does not fit the model's context window even with only the spec and the earlier errors (%w): use a model with a larger window, a shorter spec, or a lower llm.max_tokens", n, err)
		case llm.Transient(err) && try < retries:
			if err := sleep(ctx, backoff(try, err)); err != nil {
				return answer, err
			}
		default:
			if llm.Transient(err) {
				return answer, fmt.Errorf("forge attempt %d: asking the model (%d tries): %w", n, try+1, err)
			}
			return answer, fmt.Errorf("forge attempt %d: asking the model: %w", n, err)
		}
	}
}

type callFunc func(drv, op string, req any, out any) error

func backoff(try int, err error) time.Duration {
	if d := llm.RetryAfter(err); d > 0 {
		return min(d, maxRetryWait)
	}
	return min(retryBase<<try, maxRetryWait)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// parseCandidate reads call judged of m (-1: m called nothing, so its text
// is read as a JSON object {path, code, tests}).
func parseCandidate(m llm.Message, judged int) (candidate, string, error) {
	var c candidate
	var id string
	if judged >= 0 {
		tc := m.ToolCalls[judged]
		id = tc.ID
		if tc.Name != submitTool.Name {
			return c, id, fmt.Errorf("call submit_tool (not %s) with path, code and tests", tc.Name)
		}
		if err := json.Unmarshal([]byte(tc.Arguments), &c); err != nil {
			return c, id, fmt.Errorf("submit_tool's arguments are not valid JSON (%s); send one JSON object {\"path\": ..., \"code\": ..., \"tests\": ...} with the code and tests as JSON strings", jsonProblem(err))
		}
	} else {
		s := strings.TrimSpace(m.Content)
		if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
			s = s[i : j+1]
		}
		if err := json.Unmarshal([]byte(s), &c); err != nil {
			return c, "", errors.New("no tool was submitted: call submit_tool with path, code and tests")
		}
	}
	c.Code, c.Tests = stripFence(c.Code), stripFence(c.Tests)
	clean, err := validCandidate(c)
	c.Path = clean
	return c, id, err
}

// jsonProblem says what is wrong with JSON in words a model acts on.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("a syntax error at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		return fmt.Sprintf("%q must be a %s, not a %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}
