package persona

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
)

// ErrModel is the error of a tournament ended by a model call that failed
// (the server was down, refused the request ...): the calls answered
// before it are journaled, so the tournament can be resumed once the model
// answers again.
var ErrModel = errors.New("the model failed")

// Weights weigh a candidate's metered fitness:
//
//	fitness = Score*Σscore − Tokens*tokens − USD*cost_usd − Seconds*wall_seconds
//
// where Σscore sums the task scores (each 0..1) and tokens, cost and wall
// time are the model's on the evaluation calls. The zero value is
// DefaultWeights.
type Weights struct {
	Score   float64 `json:"score,omitempty"`
	Tokens  float64 `json:"tokens,omitempty"`
	USD     float64 `json:"usd,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// DefaultWeights: one task more right is worth 1000, a thousand tokens 1,
// a cent 0.1, a second of the model's time 1. Score dominates; cost, tokens
// and time decide between prompts that score alike.
var DefaultWeights = Weights{Score: 1000, Tokens: 0.001, USD: 10, Seconds: 1}

func (w Weights) orDefault() Weights {
	if w == (Weights{}) {
		return DefaultWeights
	}
	return w
}

// Fitness computes a candidate's fitness from its measures.
func (w Weights) Fitness(c Candidate) float64 {
	w = w.orDefault()
	return w.Score*c.Score - w.Tokens*float64(c.Tokens) - w.USD*c.CostUSD - w.Seconds*c.Wall.Seconds()
}

// Options configure Tournament. LLM, Base and Tasks are required.
type Options struct {
	// LLM answers chat requests. IMPORTANT: it is where the tournament is
	// journaled (a journal run's middleware: live, replayed or resumed):
	// every model call is made with a fixed Seq (see Seq), so that a
	// replay answers each from its recording and a resumed tournament
	// pays only for the calls the crash left unanswered.
	LLM driver.Host
	// Base is the persona whose prompt competes (as "baseline") with the
	// variants.
	Base Persona
	// Tasks are scored for each candidate.
	Tasks TaskSet
	// Variants is how many variants the model writes (1..20).
	Variants int
	// Weights weigh the fitness (zero: DefaultWeights).
	Weights Weights
	// Margin is how much fitter than the baseline the best variant MUST
	// be to win (0: any improvement).
	Margin float64
	// MaxTokens bounds each evaluation answer (0: the server's default).
	MaxTokens int
	// ScoreTool runs a scoring tool (tasks scored by kind tool).
	ScoreTool ToolScorer
	// Journal, when set, journals the tool scores: each run of ScoreTool
	// is made as a call (driver ScoreDriver, op OpScoreTool, the Seq of
	// ScoreSeq) through Journal(a Host that runs ScoreTool). IMPORTANT: it
	// MUST be the journal of the run opts.LLM journals (live, replayed or
	// resumed), so that a replay answers each score from its recording,
	// running no tool, and a resumed tournament runs only the scores the
	// crash left unrecorded. nil: every score runs ScoreTool, unrecorded.
	Journal driver.Middleware
	// Charge is told every answer's usage with the Seq of its call (a
	// process's quota); an error ends the tournament. It is called for
	// the answers a journal gave too: it tells them apart by Seq.
	Charge func(seq uint64, u llm.Usage) error
	// Walls, called once every call is answered, returns the recorded
	// duration of each call by Seq (the journal's), so that a replayed
	// tournament measures the wall time the original did and ranks alike.
	// nil, or a Seq missing: the time measured now.
	Walls func() (map[uint64]time.Duration, error)
}

// TaskResult is one candidate's answer to one task.
type TaskResult struct {
	Task   string        `json:"task"`
	Answer string        `json:"answer"`
	Score  float64       `json:"score"`
	Tokens int64         `json:"tokens"`
	Wall   time.Duration `json:"wall_ns"`
	Error  string        `json:"error,omitempty"`
	// Seq is the Seq of the model call that answered it.
	Seq uint64 `json:"seq"`
}

// Candidate is one prompt of a tournament and how it fared.
type Candidate struct {
	// Label is "baseline" or "v1", "v2" ...
	Label string `json:"label"`
	// System is the prompt.
	System string `json:"system"`
	// Version is Version(System).
	Version string `json:"version"`
	// Score sums the task scores.
	Score   float64       `json:"score"`
	Tokens  int64         `json:"tokens"`
	CostUSD float64       `json:"cost_usd"`
	Wall    time.Duration `json:"wall_ns"`
	Fitness float64       `json:"fitness"`
	Results []TaskResult  `json:"results"`
}

// Report is a tournament's outcome.
type Report struct {
	// Base is the base persona ("name@version").
	Base string `json:"base"`
	// Ranked are the candidates, fittest first (ties: baseline, then v1,
	// v2 ...).
	Ranked []Candidate `json:"ranked"`
	// Winner is the label of the prompt kept: the fittest variant when it
	// beats the baseline by more than Margin, else "baseline".
	Winner string `json:"winner"`
	// Improved says a variant won.
	Improved bool `json:"improved"`
	// Generation is the usage of the calls that wrote the variants.
	Generation llm.Usage `json:"generation_usage"`
	// Calls is how many model calls the tournament made (answered live or
	// from its journal).
	Calls int `json:"calls"`
}

// WinnerCandidate returns the winning candidate.
func (r Report) WinnerCandidate() Candidate {
	for _, c := range r.Ranked {
		if c.Label == r.Winner {
			return c
		}
	}
	return Candidate{}
}

// Seq returns the Seq of a tournament's model calls: variant i's writing
// (1 ≤ i ≤ variants) is i; candidate c's (0: the baseline, i: variant i)
// answer to task t (0-based) is variants + 1 + c*tasks + t.
func Seq(variants, tasks, candidate, task int) uint64 {
	return uint64(variants + 1 + candidate*tasks + task)
}

// The driver and op of a journaled tool score (Options.Journal): the
// request is {"tool", "args"}; the answer {"result"} (the tool's result)
// or {"error"} (why the tool failed: the task scores 0, as the original
// run scored it).
const (
	ScoreDriver = "score"
	OpScoreTool = "tool"
)

// ScoreSeq returns the Seq of the tool score of candidate c's answer to
// task t (see Seq): variants + 1 + (variants+1)*tasks + c*tasks + t, after
// every model call. A task scored otherwise has no call: its Seq is unused.
func ScoreSeq(variants, tasks, candidate, task int) uint64 {
	return Seq(variants, tasks, candidate, task) + uint64((variants+1)*tasks)
}

// scoreRequest and scoreAnswer are a journaled tool score's request and
// answer.
type scoreRequest struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

type scoreAnswer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// smithSystem is the prompt engineer's instruction (a variant's writing).
const smithSystem = "You are a world-class prompt engineer. You are given the CURRENT SYSTEM PROMPT of an AI assistant and examples of the tasks it is scored on. " +
	"Write an improved variant of it: keep its intent, make it more precise about the expected answers (their form, their brevity), and concise (at most 200 words). " +
	"Each variant you are asked for MUST differ from the others. Output ONLY the new system prompt: no preamble, no quotes, no explanation."

// variantRequest is the chat request that writes variant i of n.
func variantRequest(base string, ts TaskSet, i, n int) llm.Request {
	var b strings.Builder
	fmt.Fprintf(&b, "CURRENT SYSTEM PROMPT:\n%s\n\nEXAMPLE TASKS:\n", base)
	for j, t := range ts.Tasks {
		if j == 5 {
			break
		}
		fmt.Fprintf(&b, "- %s\n", oneLine(t.Input))
	}
	fmt.Fprintf(&b, "\nWrite variant %d of %d.", i, n)
	temp := 1.0
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: smithSystem}, {Role: llm.RoleUser, Content: b.String()}}, Temperature: &temp}
}

// Tournament has the model write opts.Variants variants of the base
// persona's prompt, scores the baseline and every variant on every task
// (one chat request each: the prompt as the system message, the task's
// input as the user's; no tools), ranks them by metered fitness (see
// Weights) and names the winner. It makes every call through opts.LLM with
// the Seq of Seq, one at a time, in that order; a task scored by a tool is
// scored right after its answer, through opts.Journal with the Seq of
// ScoreSeq.
//
// A variant the model leaves empty, or that repeats another candidate's
// prompt, is not scored twice: it is left out of the ranking. A model call
// that fails ends the tournament with its error, wrapping ErrModel.
func Tournament(ctx context.Context, opts Options) (Report, error) {
	if err := opts.validateTournament(); err != nil {
		return Report{}, err
	}
	t := &tournament{ctx: ctx, opts: opts, rep: Report{Base: opts.Base.Ref()}}
	t.scoreHost = t.newScoreHost()
	base := strings.TrimSpace(opts.Base.System)
	cands := []Candidate{{Label: "baseline", System: base, Version: Version(base)}}
	variants, err := t.writeVariants(base)
	if err != nil {
		return t.rep, err
	}
	cands = append(cands, variants...)
	for i := range cands {
		if err := t.score(&cands[i]); err != nil {
			return t.rep, err
		}
	}
	if err := t.fit(cands); err != nil {
		return t.rep, err
	}
	t.rank(cands)
	return t.rep, nil
}

// validateTournament checks the options Tournament needs.
func (opts Options) validateTournament() error {
	if opts.LLM == nil {
		return errors.New("persona: Tournament needs a model (Options.LLM)")
	}
	if opts.Variants < 1 || opts.Variants > 20 {
		return fmt.Errorf("persona: %d variants: a tournament writes between 1 and 20", opts.Variants)
	}
	if err := opts.Tasks.Validate("the task set"); err != nil {
		return err
	}
	if strings.TrimSpace(opts.Base.System) == "" {
		return fmt.Errorf("%w: the base persona %q has no prompt", ErrInvalid, opts.Base.Name)
	}
	return nil
}

// tournament is one Tournament's state.
type tournament struct {
	ctx       context.Context
	opts      Options
	rep       Report
	scoreHost driver.Host
	scoreErr  error // the journaled score call failed: the tournament ends
}

// ask makes one model call with the Seq seq, charges its usage, and
// returns the answer and its wall time.
func (t *tournament) ask(seq uint64, req llm.Request) (llm.Response, time.Duration, error) {
	raw, _ := json.Marshal(req)
	start := time.Now()
	out, err := t.opts.LLM.Do(t.ctx, driver.Call{Seq: seq, Driver: llm.Driver, Op: llm.OpComplete, Request: raw})
	wall := time.Since(start)
	t.rep.Calls++
	if err != nil {
		return llm.Response{}, 0, fmt.Errorf("tournament call %d: %w: %w", seq, ErrModel, err)
	}
	var r llm.Response
	if err := json.Unmarshal(out, &r); err != nil {
		return r, 0, fmt.Errorf("tournament call %d: %w", seq, err)
	}
	if t.opts.Charge != nil {
		if err := t.opts.Charge(seq, r.Usage); err != nil {
			return r, wall, err
		}
	}
	return r, wall, nil
}

// newScoreHost is the host of the tool scores, through the journal: a tool
// that fails is an answer ({"error"}), recorded like a score; only an
// interruption (or the journal failing) is an error, which ends the
// tournament.
func (t *tournament) newScoreHost() driver.Host {
	opts := t.opts
	var h driver.Host = driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
		if opts.ScoreTool == nil {
			return json.Marshal(scoreAnswer{Error: "no tool runner was given (Options.ScoreTool)"})
		}
		var req scoreRequest
		if err := json.Unmarshal(c.Request, &req); err != nil {
			return nil, err
		}
		out, err := opts.ScoreTool(ctx, req.Tool, req.Args)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return json.Marshal(scoreAnswer{Error: err.Error()})
		}
		return json.Marshal(scoreAnswer{Result: out})
	})
	if opts.Journal != nil {
		h = opts.Journal(h)
	}
	return h
}

// scoreTool is the ToolScorer of the score with the Seq seq.
func (t *tournament) scoreTool(seq uint64) ToolScorer {
	return func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
		req, _ := json.Marshal(scoreRequest{Tool: tool, Args: args})
		out, err := t.scoreHost.Do(ctx, driver.Call{Seq: seq, Driver: ScoreDriver, Op: OpScoreTool, Request: req})
		if err != nil {
			t.scoreErr = fmt.Errorf("tournament score %d (%s): %w", seq, tool, err)
			return nil, t.scoreErr
		}
		var a scoreAnswer
		if err := json.Unmarshal(out, &a); err != nil {
			t.scoreErr = fmt.Errorf("tournament score %d (%s): its answer %.200s: %w", seq, tool, out, err)
			return nil, t.scoreErr
		}
		if a.Error != "" {
			return nil, errors.New(a.Error)
		}
		return a.Result, nil
	}
}

// writeVariants has the model write the variants of base, leaving out an
// empty one and one that repeats another candidate.
func (t *tournament) writeVariants(base string) ([]Candidate, error) {
	seen := map[string]bool{Version(base): true}
	var variants []Candidate
	for i := 1; i <= t.opts.Variants; i++ {
		r, _, err := t.ask(uint64(i), variantRequest(base, t.opts.Tasks, i, t.opts.Variants))
		if err != nil {
			return nil, err
		}
		addUsage(&t.rep.Generation, r.Usage)
		text := strings.TrimSpace(r.Message.Content)
		// Keep the label of the variant's number, so that a table names
		// the same prompt "v2" in every replay.
		if text == "" || seen[Version(text)] {
			continue
		}
		seen[Version(text)] = true
		variants = append(variants, Candidate{Label: fmt.Sprintf("v%d", i), System: text, Version: Version(text)})
	}
	return variants, nil
}

// score runs candidate c on every task and scores its answers.
func (t *tournament) score(c *Candidate) error {
	opts := t.opts
	n := len(opts.Tasks.Tasks)
	ci := 0 // the baseline
	if c.Label != "baseline" {
		_, _ = fmt.Sscanf(c.Label, "v%d", &ci)
	}
	for k := range opts.Tasks.Tasks {
		req := llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: c.System}, {Role: llm.RoleUser, Content: opts.Tasks.Tasks[k].Input}}, MaxTokens: opts.MaxTokens}
		seq := Seq(opts.Variants, n, ci, k)
		r, wall, err := t.ask(seq, req)
		if err != nil {
			return err
		}
		tr := TaskResult{Task: opts.Tasks.taskID(k), Answer: r.Message.Content, Tokens: r.Usage.TotalTokens, Wall: wall, Seq: seq}
		if tr.Score, err = opts.Tasks.score(t.ctx, k, r.Message.Content, t.scoreTool(ScoreSeq(opts.Variants, n, ci, k))); err != nil {
			if t.scoreErr != nil {
				return t.scoreErr
			}
			tr.Error = err.Error()
		}
		c.Results = append(c.Results, tr)
		c.Score += tr.Score
		c.Tokens += r.Usage.TotalTokens
		c.CostUSD += r.Usage.CostUSD
	}
	return nil
}

// fit sums each candidate's wall time (the recorded ones when
// Options.Walls gives them) and computes its fitness.
func (t *tournament) fit(cands []Candidate) error {
	var walls map[uint64]time.Duration
	if t.opts.Walls != nil {
		w, err := t.opts.Walls()
		if err != nil {
			return fmt.Errorf("tournament: the recorded wall times: %w", err)
		}
		walls = w
	}
	for i := range cands {
		c := &cands[i]
		for j := range c.Results {
			if d, ok := walls[c.Results[j].Seq]; ok {
				c.Results[j].Wall = d
			}
			c.Wall += c.Results[j].Wall
		}
		c.Fitness = t.opts.Weights.Fitness(*c)
	}
	return nil
}

// rank orders the candidates fittest first (ties in their order) and names
// the winner: the fittest variant when it beats the baseline by more than
// Options.Margin, else the baseline.
func (t *tournament) rank(cands []Candidate) {
	order := map[string]int{}
	for i, c := range cands {
		order[c.Label] = i
	}
	slices.SortStableFunc(cands, func(a, b Candidate) int {
		switch {
		case a.Fitness > b.Fitness:
			return -1
		case a.Fitness < b.Fitness:
			return 1
		}
		return order[a.Label] - order[b.Label]
	})
	t.rep.Ranked = cands
	t.rep.Winner = "baseline"
	var baseFit float64
	for _, c := range cands {
		if c.Label == "baseline" {
			baseFit = c.Fitness
		}
	}
	if top := cands[0]; top.Label != "baseline" && top.Fitness > baseFit+t.opts.Margin {
		t.rep.Winner, t.rep.Improved = top.Label, true
	}
}

func addUsage(to *llm.Usage, u llm.Usage) {
	to.PromptTokens += u.PromptTokens
	to.CompletionTokens += u.CompletionTokens
	to.TotalTokens += u.TotalTokens
	to.CostUSD += u.CostUSD
}

// Table renders the report as a text table, fittest first.
func (r Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %-12s %9s %8s %9s %9s %10s\n", "candidate", "version", "score", "tokens", "cost_usd", "wall", "fitness")
	for _, c := range r.Ranked {
		mark := ""
		if c.Label == r.Winner {
			mark = "  <- winner"
		}
		score := fmt.Sprintf("%.2f/%d", c.Score, len(c.Results))
		fmt.Fprintf(&b, "%-9s %-12s %9s %8d %9.4f %9s %10.2f%s\n", c.Label, c.Version, score, c.Tokens, c.CostUSD, c.Wall.Round(time.Millisecond), c.Fitness, mark)
	}
	return b.String()
}
