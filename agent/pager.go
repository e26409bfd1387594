package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/agentos-run/agentos/driver/llm"
)

// Paging configures context paging (see Options.Paging). The zero value
// pages nothing.
type Paging struct {
	// WindowTokens is the model's context window in tokens; 0 turns paging
	// off (a conversation larger than the window then fails at the model).
	WindowTokens int
	// ReserveTokens is kept free for the model's answer (0: an eighth of
	// WindowTokens).
	ReserveTokens int
	// PageOut stores turns paged out of the context where the recall
	// kernel tool finds them, and returns their ids, in order. REQUIRED
	// when WindowTokens is set.
	PageOut func(ctx context.Context, pages []Page) ([]string, error)
}

// Page is one turn paged out of the context: an assistant message with the
// results of the tools it called, or a user message.
type Page struct {
	// Text is the turn as the model saw it, rendered as plain text (what
	// recall searches and returns).
	Text string
	// Tools are the names of the tools the turn called (the page's tags).
	Tools []string
}

// ReasonWindow ends a run whose latest turn alone does not fit the window.
const ReasonWindow = "context_window"

// The pager's watermarks, fractions of the budget (window minus reserve):
// paging starts when a request would exceed the budget and frees the
// oldest turns until the context is under pageTo of it, so that it does
// not page again at every turn.
const (
	pageTo = 0.6
	// summaryShare bounds the summary note: beyond it its oldest lines are
	// folded into one.
	summaryShare = 0.125
)

// pager keeps a conversation under its budget. Messages 0 (system) and 1
// (the task) are pinned; once it paged, message 2 is its summary note.
type pager struct {
	cfg    Paging
	budget int
	// ratio calibrates the estimate against the prompt tokens the server
	// reports (journaled, so a replay calibrates alike).
	ratio  float64
	lines  []string // the summary's lines, oldest first
	folded int      // pages folded into the first line
	noted  bool     // msgs[2] is the summary note
	paged  int      // turns paged out
}

func newPager(cfg Paging) (*pager, error) {
	if cfg.WindowTokens <= 0 {
		return nil, nil
	}
	if cfg.PageOut == nil {
		return nil, errors.New("agent: Paging.WindowTokens is set but PageOut is not: paged turns need somewhere to go")
	}
	reserve := cfg.ReserveTokens
	if reserve <= 0 {
		reserve = cfg.WindowTokens / 8
	}
	if reserve >= cfg.WindowTokens {
		return nil, fmt.Errorf("agent: the reserve of %d tokens leaves nothing of the %d-token window", reserve, cfg.WindowTokens)
	}
	return &pager{cfg: cfg, budget: cfg.WindowTokens - reserve, ratio: 1}, nil
}

// EstimateTokens is the estimate of a request's prompt tokens before the
// server's count calibrates it: its JSON bytes over four.
func EstimateTokens(msgs []llm.Message, tools []llm.ToolSpec) int {
	n := 0
	for i := range msgs {
		n += messageBytes(&msgs[i])
	}
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters) + 16
	}
	return (n + 3) / 4
}

// messageBytes approximates a message's JSON size without encoding it.
func messageBytes(m *llm.Message) int {
	n := 24 + len(m.Role) + len(m.Content) + len(m.ToolCallID) + len(m.Name)
	for _, tc := range m.ToolCalls {
		n += 40 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
}

func (pg *pager) estimate(msgs []llm.Message, tools []llm.ToolSpec) int {
	return int(math.Ceil(float64(EstimateTokens(msgs, tools)) * pg.ratio))
}

// observe calibrates the estimate with the prompt tokens the server counted
// for the request sent (msgs, tools): text that tokenizes densely (code,
// CJK, numbers) counts more than its bytes over four.
func (pg *pager) observe(msgs []llm.Message, tools []llm.ToolSpec, promptTokens int64) {
	if promptTokens <= 0 {
		return
	}
	est := EstimateTokens(msgs, tools)
	if est <= 0 {
		return
	}
	// Only upwards: a server whose count leaves something out (the tools'
	// schemas) must not make the estimate of the next, larger request too
	// small; bytes/4 is the floor.
	pg.ratio = min(max(float64(promptTokens)/float64(est), 1), 4)
}

// fit pages the oldest turns of msgs out until the request fits, and
// returns the messages to send. It fails, saying why, when the pinned
// messages and the latest turn alone do not fit.
func (pg *pager) fit(ctx context.Context, msgs []llm.Message, tools []llm.ToolSpec) ([]llm.Message, error) {
	if pg.estimate(msgs, tools) <= pg.budget {
		return msgs, nil
	}
	start := 2
	if pg.noted {
		start = 3
	}
	// The turns after the pinned messages: [from, to) each, never a tool
	// result without the call it answers.
	var turns [][2]int
	for i := start; i < len(msgs); {
		j := i + 1
		for j < len(msgs) && msgs[j].Role == llm.RoleTool {
			j++
		}
		turns = append(turns, [2]int{i, j})
		i = j
	}
	target := int(float64(pg.budget) * pageTo)
	total := pg.estimate(msgs, tools)
	// Evict the oldest turns, keeping the latest one (the model answers it).
	n := 0
	freed := 0
	for n < len(turns)-1 && total-freed > target {
		t := turns[n]
		freed += pg.estimate(msgs[t[0]:t[1]], nil)
		n++
	}
	if n == 0 {
		return nil, pg.tooLarge(msgs, tools, turns)
	}
	pages := make([]Page, n)
	for k := range n {
		pages[k] = renderPage(msgs[turns[k][0]:turns[k][1]])
	}
	ids, err := pg.cfg.PageOut(ctx, pages)
	if err != nil {
		return nil, fmt.Errorf("agent: paging %d turns out of the context: %w", n, err)
	}
	if len(ids) != n {
		return nil, fmt.Errorf("agent: paging %d turns out of the context: %d ids came back", n, len(ids))
	}
	for k, id := range ids {
		pg.lines = append(pg.lines, fmt.Sprintf("- page %s: %s", id, summarize(msgs[turns[k][0]:turns[k][1]])))
	}
	pg.paged += n
	pg.foldLines()
	out := make([]llm.Message, 0, len(msgs)-turns[n-1][1]+start+1)
	out = append(out, msgs[:2]...)
	out = append(out, llm.Message{Role: llm.RoleUser, Content: pg.note()})
	out = append(out, msgs[turns[n-1][1]:]...)
	pg.noted = true
	if pg.estimate(out, tools) > pg.budget {
		return nil, pg.tooLarge(out, tools, nil)
	}
	return out, nil
}

func (pg *pager) tooLarge(msgs []llm.Message, tools []llm.ToolSpec, _ [][2]int) error {
	return &WindowError{Tokens: pg.estimate(msgs, tools), Budget: pg.budget, Window: pg.cfg.WindowTokens}
}

// WindowError: the system prompt, the task, the paging note and the latest
// turn alone exceed the window's budget; nothing more can be paged out.
type WindowError struct {
	Tokens, Budget, Window int
}

func (e *WindowError) Error() string {
	return fmt.Sprintf("agent: the context cannot fit the model's window: the system prompt, the task and the latest turn alone are about %d tokens, over the budget of %d (a %d-token window less the reserve for the answer): raise memory.window_tokens to the model's real window, or have tools return less (a narrower query, a LIMIT)", e.Tokens, e.Budget, e.Window)
}

// note is the summary that stays in context in place of the paged turns.
func (pg *pager) note() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[context paging] %d earlier turns of this conversation were paged out of your context window to your memory. Call recall with a query (e.g. a name or a value you need) to bring the relevant pages back. An extract of each page:\n", pg.paged)
	for _, l := range pg.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// foldLines folds the oldest summary lines into one while the note is over
// its share of the budget.
func (pg *pager) foldLines() {
	limit := int(float64(pg.budget)*summaryShare) * 4 // bytes
	size := func() int {
		n := 0
		for _, l := range pg.lines {
			n += len(l) + 1
		}
		return n
	}
	for len(pg.lines) > 2 && size() > limit {
		if pg.folded == 0 {
			pg.folded = 1 // lines[0], one page, becomes the folded line
		} else {
			pg.lines = pg.lines[1:] // the folded line goes; the next page's line becomes it
			pg.folded++
		}
		pg.lines[0] = fmt.Sprintf("- %d older pages (recall searches them all)", pg.folded)
	}
}

// renderPage is a turn as plain text: what recall searches and returns.
func renderPage(msgs []llm.Message) Page {
	var b strings.Builder
	var tools []string
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			if m.Content != "" {
				fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "%s called %s(%s)\n", m.Role, tc.Name, tc.Arguments)
				if !contains(tools, tc.Name) {
					tools = append(tools, tc.Name)
				}
			}
		case m.Role == llm.RoleTool:
			fmt.Fprintf(&b, "result: %s\n", m.Content)
		default:
			fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
		}
	}
	return Page{Text: b.String(), Tools: tools}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// summarize is a turn's extract for the note (extractive, no model call):
// the calls made and the start of their results, or the start of a text.
func summarize(msgs []llm.Message) string {
	var parts []string
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			for _, tc := range m.ToolCalls {
				parts = append(parts, fmt.Sprintf("%s(%s)", tc.Name, clipLine(compactJSON(tc.Arguments), 80)))
			}
		case m.Role == llm.RoleTool:
			parts = append(parts, "-> "+clipLine(m.Content, 100))
		default:
			parts = append(parts, m.Role+": "+clipLine(m.Content, 120))
		}
	}
	return strings.Join(parts, " ")
}

func compactJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// clipLine is s on one line, at most n runes.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
