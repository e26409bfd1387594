package tournament

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/persona"
)

// Kind is the journal run kind of a tournament.
const Kind = "tournament"

// Image is the image of a tournament's process (ps and events show it).
const Image = "tournament"

// ErrNoModel is the error of an agent or a tournament without a model.
var ErrNoModel = errors.New("agentos: no model is configured: set AGENTOS_LLM_BASE_URL and AGENTOS_LLM_MODEL (or llm in agentos.json)")

// Options configure Runner.Start. Persona and Tasks are required.
type Options struct {
	// Persona is the base persona ("name" or "name@version").
	Persona string
	// Tasks are what the candidates are scored on.
	Tasks persona.TaskSet
	// Variants is how many variants the model writes (0:
	// agents.tournament.variants, default 3).
	Variants int
	// DryRun reports without saving the winner.
	DryRun bool
}

// Report is a tournament's outcome: the ranked table, its journal run, and
// the persona version saved when a variant won.
type Report struct {
	persona.Report
	// Run is the journal run (agentos trace RUN; Runner.Replay).
	Run string `json:"run"`
	// Saved is the winner, saved as the persona's new version (nil: the
	// baseline won, a dry run, or a replay).
	Saved *persona.Persona `json:"saved,omitempty"`
	// Replayed says every model answer came from the journal.
	Replayed bool `json:"replayed,omitempty"`
}

// Config is the "tournament" section of agentos.json's "agents"
// (agents.tournament): how prompt tournaments run. The zero value: 3
// variants, any improvement wins, the default weights, the model server's
// answer cap, and only the default process's limits.
type Config struct {
	// Variants is how many variants the model writes. Default 3.
	Variants int `json:"variants,omitempty"`
	// Margin is how much fitter than the baseline a variant must be to
	// become the persona's new version. Default 0 (any improvement).
	Margin float64 `json:"margin,omitempty"`
	// Weights weigh the metered fitness. Default: score 1000, tokens
	// 0.001, usd 10, seconds 1.
	Weights persona.Weights `json:"weights,omitzero"`
	// Quota limits each tournament's process (meters as agentos.json's
	// quota). Default: only the default process's limits apply.
	Quota capability.Quota `json:"quota,omitempty"`
	// MaxTokens bounds each evaluation answer. Default: the model
	// server's.
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Validate checks the section, naming the key that is wrong.
func (c Config) Validate() error {
	if c.Variants < 0 || c.Variants > 20 {
		return fmt.Errorf("agents.tournament.variants %d: use 1 to 20 (0: 3)", c.Variants)
	}
	if c.Margin < 0 {
		return fmt.Errorf("agents.tournament.margin %g must not be negative", c.Margin)
	}
	if w := c.Weights; w.Score < 0 || w.Tokens < 0 || w.USD < 0 || w.Seconds < 0 {
		return fmt.Errorf("agents.tournament.weights must not be negative")
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("agents.tournament.max_tokens %d must be positive (0: the server's default)", c.MaxTokens)
	}
	_, err := c.Quota.Limits(quotaKey)
	return err
}

// quotaKey is where agentos.json writes a tournament's quota.
const quotaKey = "agents.tournament.quota"

// Process is the tournament's process, as its body sees it.
type Process interface {
	// Call runs the kernel tool name as the process (exec_tool scores a
	// task with a tool), answering its JSON result.
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
	// Charge charges the process's account (and every ancestor's) amount
	// of meter m, failing when a quota is exceeded.
	Charge(m capability.Meter, amount float64) error
	// Account is the process's own account.
	Account() *capability.Account
}

// Body is a tournament's body, run in its process.
type Body func(ctx context.Context, p Process) error

// Spawn starts body in a child process of the default process with the
// image, grants and quota given. wait returns once the process has ended,
// with an error when it ended abnormally. IMPORTANT: Spawn MUST NOT run
// body when it returns an error.
type Spawn func(body Body, image string, grants []capability.Grant, quota capability.Limits) (wait func() error, err error)

// Runner runs tournaments on one node. Every field is required but PII.
type Runner struct {
	// Journal records the tournaments' runs.
	Journal *journal.Journal
	// Model answers the model calls (nil: none is configured, ErrNoModel).
	Model driver.Device
	// PII tokenizes the model calls above the journal (nil: nothing).
	PII driver.Middleware
	// Personas reads the base persona and saves a winner.
	Personas *persona.Store
	// Approved answers the version of p an agent may use (its last
	// approved one when p is held for approval); pinned: p was asked for
	// by its version, which then MUST be approved.
	Approved func(p persona.Persona, pinned bool) (persona.Persona, error)
	// Saved records a saved persona version as approved.
	Saved func(p persona.Persona, origin string) error
	// Config is agents.tournament (its quota limits the tournament's
	// process).
	Config Config
	// Spawn starts the tournament's process.
	Spawn Spawn
}

// args are a tournament's journaled arguments: all a resume or a replay
// needs, whatever the personas and the configuration became since.
type args struct {
	Persona   string          `json:"persona"`
	Base      persona.Persona `json:"base"`
	Tasks     persona.TaskSet `json:"tasks"`
	Variants  int             `json:"variants"`
	Margin    float64         `json:"margin,omitempty"`
	Weights   persona.Weights `json:"weights,omitzero"`
	MaxTokens int             `json:"max_tokens,omitempty"`
	DryRun    bool            `json:"dry_run,omitempty"`
}

// Start improves a persona (prompt evolution, see persona.Tournament): the
// model writes variants of its prompt, the baseline and every variant are
// scored on the tasks, ranked by metered fitness (score, tokens, cost,
// wall time), and the fittest variant, when it beats the baseline by more
// than Config.Margin, is saved as the persona's new version (its parent
// the base version, its origin the run).
func (r *Runner) Start(ctx context.Context, opts Options) (Report, error) {
	if r.Model == nil {
		return Report{}, ErrNoModel
	}
	a, err := r.startArgs(opts)
	if err != nil {
		return Report{}, err
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return Report{}, err
	}
	run, err := r.Journal.Begin(journal.RunMeta{Kind: Kind, Tool: r.Personas.CurrentPath(a.Base.Name), Args: raw})
	if err != nil {
		return Report{}, err
	}
	var host driver.Host = driver.Mux{llm.Driver: r.Model}
	host = driver.Chain(host, r.PII, run.Durable().Middleware())
	return r.run(ctx, run.ID(), run, a, calls{model: host, scores: run.Middleware()})
}

// startArgs checks opts and resolves them to a new tournament's arguments.
func (r *Runner) startArgs(opts Options) (args, error) {
	if opts.Persona == "" {
		return args{}, errors.New("agentos: a tournament needs a base persona (TournamentOptions.Persona, --persona)")
	}
	base, err := r.Personas.Get(opts.Persona)
	if err != nil {
		return args{}, err
	}
	// A held version is not evolved (its winner would be saved approved).
	_, pinned := persona.SplitRef(opts.Persona)
	if base, err = r.Approved(base, pinned != ""); err != nil {
		return args{}, err
	}
	if err := opts.Tasks.Validate("the task set"); err != nil {
		return args{}, err
	}
	tc := r.Config
	a := args{Persona: opts.Persona, Base: base, Tasks: opts.Tasks, Variants: opts.Variants, Margin: tc.Margin, Weights: tc.Weights, MaxTokens: tc.MaxTokens, DryRun: opts.DryRun}
	if a.Variants == 0 {
		a.Variants = tc.Variants
	}
	if a.Variants == 0 {
		a.Variants = 3
	}
	if a.Variants < 1 || a.Variants > 20 {
		return args{}, fmt.Errorf("agentos: %d variants: a tournament writes between 1 and 20", a.Variants)
	}
	return a, nil
}

// Resume finishes a tournament a crash, a cancellation or a model failure
// (persona.ErrModel) left unfinished: its recorded answers are replayed,
// the calls it never made (or whose answer was an error) go to the model,
// in the same run.
func (r *Runner) Resume(ctx context.Context, id string) (Report, error) {
	meta, a, err := r.recorded(id)
	if err != nil {
		return Report{}, err
	}
	if meta.Status != journal.StatusRunning {
		return Report{}, fmt.Errorf("agentos: tournament %s has ended (%s): nothing to resume; replay it with 'agentos tournament --replay %s'", meta.ID, meta.Status, meta.ID)
	}
	if r.Model == nil {
		return Report{}, ErrNoModel
	}
	rec, err := r.Journal.Recover(meta.ID)
	if err != nil {
		return Report{}, err
	}
	entries, err := r.Journal.Entries(meta.ID)
	if err != nil {
		return Report{}, err
	}
	answered := map[uint64]bool{}
	for _, e := range entries {
		answered[e.Seq] = e.Error == nil
	}
	// A call whose recorded answer is an error (the model was down) is
	// made again, its answer recorded over the error.
	durable := rec.Run().Durable()
	resumed := func(next driver.Host) driver.Host {
		replayed, live := rec.Middleware()(next), durable.Middleware()(next)
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			if answered[c.Seq] {
				return replayed.Do(ctx, c)
			}
			return live.Do(ctx, c)
		})
	}
	// Tokenized above the journal, as the original calls were.
	host := driver.Chain(resumed(driver.Mux{llm.Driver: r.Model}), r.PII)
	return r.run(ctx, meta.ID, rec.Run(), a, calls{model: host, scores: resumed, paid: answered})
}

// Replay re-runs a recorded tournament offline: every model answer and
// tool score comes from the journal (no model is needed and none is asked,
// no scoring tool runs); the report is rebuilt as the original was (wall
// times included) and nothing is saved. A call the recording lacks is a
// divergence error.
func (r *Runner) Replay(ctx context.Context, id string) (Report, error) {
	meta, a, err := r.recorded(id)
	if err != nil {
		return Report{}, err
	}
	rp, err := r.Journal.Replayer(meta.ID)
	if err != nil {
		return Report{}, err
	}
	// Tokenized above the journal, as the original calls were.
	host := driver.Chain(rp.Middleware()(nil), r.PII)
	c := calls{model: host, scores: rp.Middleware(), replay: true}
	if len(scoringTools(a.Tasks)) > 0 && !recordsScores(r.entries(meta.ID)) {
		// Recorded before the tool scores were journaled: its scoring
		// tools run again, as they did then.
		c.scores = nil
	}
	a.DryRun = true
	rep, err := r.run(ctx, meta.ID, nil, a, c)
	if err == nil {
		if d := rp.Finish(); d != nil {
			err = d
		}
	}
	return rep, err
}

// recorded reads a tournament run's metadata and arguments.
func (r *Runner) recorded(id string) (journal.RunMeta, args, error) {
	var a args
	meta, err := r.Journal.Get(id)
	if err != nil {
		return meta, a, err
	}
	if meta.Kind != Kind {
		return meta, a, fmt.Errorf("agentos: run %s is of kind %s, not a tournament (list them with 'agentos runs')", meta.ID, meta.Kind)
	}
	if err := json.Unmarshal(meta.Args, &a); err != nil {
		return meta, a, fmt.Errorf("agentos: tournament %s: its recorded arguments: %w", meta.ID, err)
	}
	return meta, a, nil
}

// entries returns run id's recorded calls (none when they cannot be read:
// the replay then reports what it misses).
func (r *Runner) entries(id string) []journal.Entry {
	es, _ := r.Journal.Entries(id)
	return es
}

// recordsScores says a tournament's recording holds tool scores.
func recordsScores(entries []journal.Entry) bool {
	for _, e := range entries {
		if e.Driver == persona.ScoreDriver {
			return true
		}
	}
	return false
}

// scoringTools are the tools a task set scores with (kind tool).
func scoringTools(ts persona.TaskSet) []string {
	var out []string
	add := func(s *persona.Scorer) {
		if s != nil && s.Kind == persona.ScoreTool && s.Tool != "" && !slices.Contains(out, s.Tool) {
			out = append(out, s.Tool)
		}
	}
	add(&ts.Scorer)
	for _, t := range ts.Tasks {
		add(t.Scorer)
	}
	return out
}
