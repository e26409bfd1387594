package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/persona"
)

// Personas returns the tool root's personas (agents.personas_dir): read
// from the working tree, saved through the git actor like tools (committed
// and pushed with a Git upstream, so that they are shared as tools are).
func (rt *Runtime) Personas() *persona.Store {
	return &persona.Store{Dir: rt.cfg.Agents.Personas(), FS: rt.jail, Write: func(ctx context.Context, path string, content []byte) error {
		_, err := rt.node.WriteFile(ctx, path, content)
		return err
	}}
}

// SavePersona saves p as the current version of its persona (see
// persona.Store.Save): Origin defaults to "set".
func (rt *Runtime) SavePersona(ctx context.Context, p persona.Persona) (persona.Persona, error) {
	if p.Origin == "" {
		p.Origin = "set"
	}
	saved, err := rt.Personas().Save(ctx, p)
	if err != nil {
		return saved, err
	}
	return saved, rt.personaSaved(saved, saved.Origin)
}

// systemFor resolves the persona an agent is started with (ref, else
// agents.persona) to its system prompt and its "name@version"; none: the
// built-in prompt ("", "").
func (rt *Runtime) systemFor(ref string) (system, used string, err error) {
	if ref == "" {
		ref = rt.cfg.Agents.Persona
	}
	if ref == "" {
		return "", "", nil
	}
	p, err := rt.Personas().Get(ref)
	if err != nil {
		return "", "", err
	}
	_, version := persona.SplitRef(ref)
	if p, err = rt.approvedPersona(p, version != ""); err != nil {
		return "", "", err
	}
	return p.Prompt(agent.SystemPrompt), p.Ref(), nil
}

// SpawnOptions configure Spawn.
type SpawnOptions struct {
	// Parent is the spawner: the agent is its child, its grants delegated
	// from the spawner's token (nil: the default process).
	Parent *kernel.Process
	// Name registers the agent's process (default: unnamed; ps shows its
	// image, "agent/<template>").
	Name string
	// Persona overrides the template's persona.
	Persona string
	// MaxSteps overrides the template's max_steps.
	MaxSteps int
}

// Template returns the nursery's template name (agents.templates). An
// unknown name is an error listing the known ones.
func (rt *Runtime) Template(name string) (AgentTemplate, error) {
	t, ok := rt.cfg.Agents.Templates[name]
	if !ok {
		known := "none is configured: add one under agents.templates in agentos.json (see " + ConfigDoc + ")"
		if names := rt.cfg.Agents.TemplateNames(); len(names) > 0 {
			known = "the known ones are " + strings.Join(names, ", ")
		}
		return AgentTemplate{}, fmt.Errorf("agentos: there is no agent template %q: %s", name, known)
	}
	return t, nil
}

// Spawn runs task as an agent spawned from the template name (the
// nursery): its persona, grants, quota, tools and step budget are the
// template's. The agent is a child of the spawner (opts.Parent, default the
// default process): its grants are delegated from the spawner's token and
// MUST NOT exceed them (a template asking for more fails to spawn, saying
// which right), and its spending is charged to the spawner too. Its model
// calls are journaled under a run of kind "agent", like RunAgent's.
func (rt *Runtime) Spawn(ctx context.Context, name, task string, opts SpawnOptions) (agent.Result, error) {
	if rt.model == nil {
		return agent.Result{}, ErrNoModel
	}
	t, err := rt.Template(name)
	if err != nil {
		return agent.Result{}, err
	}
	parent := opts.Parent
	if parent == nil {
		parent = rt.agent
	}
	grants := t.Grants
	if grants == nil {
		tok, ok := parent.Token()
		if !ok {
			return agent.Result{}, fmt.Errorf("agentos: template %q names no grants and its spawner %v holds none to pass on", name, parent.PID())
		}
		grants = tok.Grants
	}
	quota, err := limits("", "agents.templates."+name+".quota", t.Quota)
	if err != nil {
		return agent.Result{}, err
	}
	ref := opts.Persona
	if ref == "" {
		ref = t.Persona
	}
	system, used, err := rt.systemFor(ref)
	if err != nil {
		return agent.Result{}, fmt.Errorf("agentos: template %q: %w", name, err)
	}
	steps := opts.MaxSteps
	if steps == 0 {
		steps = t.MaxSteps
	}
	// Paging, lessons and distillation as for RunAgent (the memory section).
	mem, err := rt.agentMemory(opts.Name, 0, 0, false)
	if err != nil {
		return agent.Result{}, err
	}
	res, err := agent.RunProcess(ctx, task, agent.ProcessOptions{
		Node: rt.node, Model: rt.model, Journal: rt.j, PII: rt.pii,
		Name: opts.Name, Grants: grants, Quota: quota, MaxSteps: steps,
		System: system, Persona: used, Tools: t.Tools, Parent: parent, Image: TemplateImage(name),
		WindowTokens: mem.WindowTokens, ReserveTokens: mem.ReserveTokens, Lessons: mem.Lessons, Distill: mem.Distill,
	})
	if err != nil && errors.Is(err, capability.ErrAmplify) {
		return res, fmt.Errorf("agentos: template %q asks for rights its spawner (process %v) lacks: %w; a spawned agent can never do more than its spawner (add the right to the spawner's grants, or remove it from the template's)", name, parent.PID(), err)
	}
	return res, err
}

// ErrNoModel is the error of an agent or a tournament without a model.
var ErrNoModel = errors.New("agentos: no model is configured: set AGENTOS_LLM_BASE_URL and AGENTOS_LLM_MODEL (or llm in agentos.json)")

// TournamentKind is the journal run kind of a tournament.
const TournamentKind = "tournament"

// TournamentOptions configure Tournament. Persona and Tasks are required.
type TournamentOptions struct {
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

// TournamentReport is a tournament's outcome: the ranked table, its
// journal run, and the persona version saved when a variant won.
type TournamentReport struct {
	persona.Report
	// Run is the journal run (agentos trace RUN; ReplayTournament).
	Run string `json:"run"`
	// Saved is the winner, saved as the persona's new version (nil: the
	// baseline won, a dry run, or a replay).
	Saved *persona.Persona `json:"saved,omitempty"`
	// Replayed says every model answer came from the journal.
	Replayed bool `json:"replayed,omitempty"`
}

// tournamentArgs are a tournament's journaled arguments: all a resume or a
// replay needs, whatever the personas and the configuration became since.
type tournamentArgs struct {
	Persona   string          `json:"persona"`
	Base      persona.Persona `json:"base"`
	Tasks     persona.TaskSet `json:"tasks"`
	Variants  int             `json:"variants"`
	Margin    float64         `json:"margin,omitempty"`
	Weights   persona.Weights `json:"weights,omitzero"`
	MaxTokens int             `json:"max_tokens,omitempty"`
	DryRun    bool            `json:"dry_run,omitempty"`
}

// Tournament improves a persona (prompt evolution, see persona.Tournament):
// the model writes variants of its prompt, the baseline and every variant
// are scored on the tasks, ranked by metered fitness (score, tokens, cost,
// wall time), and the fittest variant, when it beats the baseline by more
// than agents.tournament.margin, is saved as the persona's new version
// (committed like a tool; its parent is the base version, its origin the
// run).
//
// The tournament runs as a child process of the default process (image
// "tournament", the llm right, agents.tournament.quota), and every model
// call and every tool score is journaled in a run of kind "tournament",
// each committed before it is used: ReplayTournament replays it with no
// model request and no scoring tool run, and ResumeTournament finishes one
// a crash interrupted, paying only for the calls never answered.
func (rt *Runtime) Tournament(ctx context.Context, opts TournamentOptions) (TournamentReport, error) {
	if rt.model == nil {
		return TournamentReport{}, ErrNoModel
	}
	if opts.Persona == "" {
		return TournamentReport{}, errors.New("agentos: a tournament needs a base persona (TournamentOptions.Persona, --persona)")
	}
	base, err := rt.Personas().Get(opts.Persona)
	if err != nil {
		return TournamentReport{}, err
	}
	// A held version is not evolved (its winner would be saved approved).
	_, pinned := persona.SplitRef(opts.Persona)
	if base, err = rt.approvedPersona(base, pinned != ""); err != nil {
		return TournamentReport{}, err
	}
	if err := opts.Tasks.Validate("the task set"); err != nil {
		return TournamentReport{}, err
	}
	tc := rt.cfg.Agents.Tournament
	a := tournamentArgs{Persona: opts.Persona, Base: base, Tasks: opts.Tasks, Variants: opts.Variants, Margin: tc.Margin, Weights: tc.Weights, MaxTokens: tc.MaxTokens, DryRun: opts.DryRun}
	if a.Variants == 0 {
		a.Variants = tc.Variants
	}
	if a.Variants == 0 {
		a.Variants = 3
	}
	if a.Variants < 1 || a.Variants > 20 {
		return TournamentReport{}, fmt.Errorf("agentos: %d variants: a tournament writes between 1 and 20", a.Variants)
	}
	args, err := json.Marshal(a)
	if err != nil {
		return TournamentReport{}, err
	}
	run, err := rt.j.Begin(journal.RunMeta{Kind: TournamentKind, Tool: rt.Personas().CurrentPath(base.Name), Args: args})
	if err != nil {
		return TournamentReport{}, err
	}
	var host driver.Host = driver.Mux{llm.Driver: rt.model}
	host = driver.Chain(host, rt.pii.ModelMiddleware(), run.Durable().Middleware())
	return rt.runTournament(ctx, run.ID(), run, a, tournamentCalls{model: host, scores: run.Middleware()})
}

// ResumeTournament finishes a tournament a crash, a cancellation or a
// model failure (persona.ErrModel) left unfinished: its recorded answers
// are replayed, the calls it never made (or whose answer was an error) go
// to the model, in the same run.
func (rt *Runtime) ResumeTournament(ctx context.Context, id string) (TournamentReport, error) {
	meta, a, err := rt.tournamentRun(id)
	if err != nil {
		return TournamentReport{}, err
	}
	if meta.Status != journal.StatusRunning {
		return TournamentReport{}, fmt.Errorf("agentos: tournament %s has ended (%s): nothing to resume; replay it with 'agentos tournament --replay %s'", meta.ID, meta.Status, meta.ID)
	}
	if rt.model == nil {
		return TournamentReport{}, ErrNoModel
	}
	rec, err := rt.j.Recover(meta.ID)
	if err != nil {
		return TournamentReport{}, err
	}
	entries, err := rt.j.Entries(meta.ID)
	if err != nil {
		return TournamentReport{}, err
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
	host := driver.Chain(resumed(driver.Mux{llm.Driver: rt.model}), rt.pii.ModelMiddleware())
	return rt.runTournament(ctx, meta.ID, rec.Run(), a, tournamentCalls{model: host, scores: resumed, paid: answered})
}

// ReplayTournament re-runs a recorded tournament offline: every model
// answer and tool score comes from the journal (no model is needed and
// none is asked, no scoring tool runs);
// the report is rebuilt as the original was (wall times included) and
// nothing is saved. A call the recording lacks is a divergence error.
func (rt *Runtime) ReplayTournament(ctx context.Context, id string) (TournamentReport, error) {
	meta, a, err := rt.tournamentRun(id)
	if err != nil {
		return TournamentReport{}, err
	}
	rp, err := rt.j.Replayer(meta.ID)
	if err != nil {
		return TournamentReport{}, err
	}
	// Tokenized above the journal, as the original calls were.
	host := driver.Chain(rp.Middleware()(nil), rt.pii.ModelMiddleware())
	calls := tournamentCalls{model: host, scores: rp.Middleware(), replay: true}
	if len(scoringTools(a.Tasks)) > 0 && !recordsScores(entries(rt, meta.ID)) {
		// Recorded before the tool scores were journaled: its scoring
		// tools run again, as they did then.
		calls.scores = nil
	}
	a.DryRun = true
	rep, err := rt.runTournament(ctx, meta.ID, nil, a, calls)
	if err == nil {
		if d := rp.Finish(); d != nil {
			err = d
		}
	}
	return rep, err
}

// tournamentRun reads a tournament run's metadata and arguments.
func (rt *Runtime) tournamentRun(id string) (journal.RunMeta, tournamentArgs, error) {
	var a tournamentArgs
	meta, err := rt.j.Get(id)
	if err != nil {
		return meta, a, err
	}
	if meta.Kind != TournamentKind {
		return meta, a, fmt.Errorf("agentos: run %s is a %s run, not a tournament (list them with 'agentos runs')", meta.ID, meta.Kind)
	}
	if err := json.Unmarshal(meta.Args, &a); err != nil {
		return meta, a, fmt.Errorf("agentos: tournament %s: its recorded arguments: %w", meta.ID, err)
	}
	return meta, a, nil
}

// tournamentCalls are how a tournament's calls are made: live, resumed or
// replayed.
type tournamentCalls struct {
	// model makes the model calls, journaled.
	model driver.Host
	// scores journals the tool scores (persona.Options.Journal) in the
	// same run (nil: unrecorded).
	scores driver.Middleware
	// paid are the Seqs whose answers an earlier attempt of a resumed
	// tournament got, and was charged for.
	paid map[uint64]bool
	// replay: every answer is the journal's, nothing is charged.
	replay bool
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

// entries returns run id's recorded calls (none when they cannot be read:
// the replay then reports what it misses).
func entries(rt *Runtime, id string) []journal.Entry {
	es, _ := rt.j.Entries(id)
	return es
}

// runTournament runs the tournament in a child process of the default
// process, with its calls made as calls says; run (nil on a replay) is
// ended with the report. A winner is saved (unless a dry run) before the
// run ends, so that a crash in between resumes to the same save.
func (rt *Runtime) runTournament(ctx context.Context, id string, run *journal.Run, a tournamentArgs, calls tournamentCalls) (TournamentReport, error) {
	replay := calls.replay
	out := TournamentReport{Run: id, Replayed: replay}
	grants := []capability.Grant{{Right: capability.LLM}}
	for _, s := range scoringTools(a.Tasks) {
		grants = append(grants, capability.Grant{Right: capability.Exec, Scope: s}, capability.Grant{Right: capability.Read, Scope: s})
	}
	quota, err := limits("", "agents.tournament.quota", rt.cfg.Agents.Tournament.Quota)
	if err != nil {
		return out, err
	}
	var rep persona.Report
	var runErr error
	callerCtx := ctx
	finished := make(chan struct{}) // closed when the body has returned: res is then complete
	p, err := rt.agent.Spawn(func(ctx context.Context, p *kernel.Process) error {
		defer close(finished)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(callerCtx, cancel)
		defer stop()
		rep, runErr = persona.Tournament(ctx, persona.Options{
			LLM: calls.model, Journal: calls.scores, Base: a.Base, Tasks: a.Tasks, Variants: a.Variants, Weights: a.Weights, Margin: a.Margin, MaxTokens: a.MaxTokens,
			ScoreTool: func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
				call, _ := json.Marshal(map[string]any{"path": tool, "args": args})
				out, err := rt.node.Call(ctx, p, "exec_tool", call)
				if err != nil {
					return nil, err
				}
				var r struct {
					Success bool            `json:"success"`
					Result  json.RawMessage `json:"result"`
					Error   *struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal(out, &r); err != nil {
					return nil, err
				}
				if !r.Success {
					msg := "it failed"
					if r.Error != nil {
						msg = r.Error.Message
					}
					return nil, errors.New(msg)
				}
				return r.Result, nil
			},
			Charge: func(seq uint64, u llm.Usage) error {
				if replay {
					return nil // nothing is spent on a replay
				}
				if calls.paid[seq] {
					// Paid by the attempt that got it, whose account (and
					// every ancestor's) was charged then: counted on this
					// process's own account only, so that its quota covers
					// the whole tournament.
					acct := p.Account()
					acct.Carry(capability.Limits{capability.LLMTokens: acct.Used(capability.LLMTokens) + float64(u.TotalTokens), capability.CostUSD: acct.Used(capability.CostUSD) + u.CostUSD})
					return nil
				}
				if err := p.Charge(capability.LLMTokens, float64(u.TotalTokens)); err != nil {
					return err
				}
				return p.Charge(capability.CostUSD, u.CostUSD)
			},
			Walls: func() (map[uint64]time.Duration, error) {
				entries, err := rt.j.Entries(id)
				if err != nil {
					return nil, err
				}
				walls := make(map[uint64]time.Duration, len(entries))
				for _, e := range entries {
					walls[e.Seq] = e.Duration
				}
				return walls, nil
			},
		})
		return runErr
	}, kernel.SpawnOptions{Image: "tournament", Grants: grants, Quota: quota})
	if err != nil {
		err = fmt.Errorf("agentos: starting the tournament's process: %w", err)
		if run != nil {
			res, _ := json.Marshal(out)
			_ = run.End(journal.StatusFailed, res, nil)
		}
		return out, err
	}
	<-finished // the body has returned: rep and runErr are complete
	<-p.Done()
	if reason, _ := p.Reason(); runErr == nil && reason.Kind != kernel.Normal {
		runErr = fmt.Errorf("agentos: the tournament's process ended: %s", reason)
	}
	out.Report = rep
	if runErr == nil && rep.Improved && !a.DryRun {
		w := rep.WinnerCandidate()
		saved, err := rt.Personas().Save(ctx, persona.Persona{
			Name: a.Base.Name, Description: a.Base.Description, NoProtocol: a.Base.NoProtocol, System: w.System,
			Parent: a.Base.Version, Origin: "tournament " + out.Run,
		})
		if err == nil {
			err = rt.personaSaved(saved, saved.Origin)
		}
		if err != nil {
			runErr = fmt.Errorf("agentos: saving the winner %s as persona %q: %w", w.Label, a.Base.Name, err)
		} else {
			out.Saved = &saved
		}
	}
	if run != nil {
		if runErr != nil && (ctx.Err() != nil || errors.Is(runErr, persona.ErrModel)) {
			// Cancelled, or the model failed: left running, to be resumed
			// (the failed call is asked again).
			_ = run.Interrupt(runErr.Error())
			return out, runErr
		}
		status := journal.StatusOK
		if runErr != nil {
			status = journal.StatusFailed
		}
		res, _ := json.Marshal(out)
		if err := run.End(status, res, nil); err != nil && runErr == nil {
			runErr = err
		}
	}
	return out, runErr
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

// TemplateImage is the image of the agents the nursery spawns from the
// template name ("agent/<name>"): ps and events show it, and the runtime
// registers agent.ImageMain under it, so that a snapshot of such an agent
// restores and resumes its run.
func TemplateImage(name string) string { return agent.Image + "/" + name }
