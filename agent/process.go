package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/memory"
	"github.com/agentos-run/agentos/pii"
	"github.com/agentos-run/agentos/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Kind is the journal kind of an agent's run.
const Kind = "agent"

// Image is the image name of agent processes (ps, kernel.RegisterImage):
// the runtime registers ImageMain under it, so that a snapshot of an agent
// restores (agentos restore) into a process that resumes its run.
const Image = "agent"

// ProcessOptions configure RunProcess. Node, Model and Journal are
// required.
type ProcessOptions struct {
	// Node is the booted node whose kernel spawns the agent's process and
	// whose kernel tools it calls.
	Node Node
	// Model is the LLM device (llm.Client.Device()).
	Model driver.Device
	// Journal records the agent's model calls under a run of kind "agent".
	Journal *journal.Journal
	// Name registers the agent's process.
	Name string
	// Grants are its rights; the llm right is added when missing.
	Grants []capability.Grant
	// Quota limits it (its llm_tokens and cost_usd are charged per answer).
	Quota capability.Limits
	// MaxSteps bounds its model requests (0: 20).
	MaxSteps int
	// PII tokenizes what reaches its model: the tool results (Options.PII)
	// and every chat request, above the journal, so that the journal
	// records tokens only. nil: nothing is tokenized.
	PII *pii.Tokenizer
	// System is the system prompt (Options.System; "": SystemPrompt), e.g.
	// a persona's (see package persona).
	System string
	// Persona names the persona System came from ("name@version"), kept in
	// the journaled run's arguments. "": none.
	Persona string
	// Tools names the kernel tools the agent is given (nil: all of them).
	Tools []string
	// Parent, when set, spawns the agent as its child: Grants are then
	// delegated from the parent's token and MUST NOT exceed them (the
	// spawn fails otherwise), its quota account is a child of the
	// parent's, and the parent needs the spawn right. nil: the kernel
	// spawns it with Grants as given. IMPORTANT: leave it the nil interface,
	// not a nil *kernel.Process, to mean none.
	Parent proc.Process
	// Image names the process's image in ps and events ("": Image, e.g.
	// "agent/<template>" for the nursery's). IMPORTANT: a snapshot of the
	// process restores only if ImageMain is registered under that name too
	// (the runtime registers it for every configured template).
	Image string
	// WindowTokens is the model's context window: the conversation is
	// paged into the node's memory (Node.Memory, under the agent's
	// memory name, State.MemoryName) when it would outgrow it, and the
	// recall tool brings pages back (see Paging). 0: no paging.
	WindowTokens int
	// ReserveTokens is kept free for the answer (0: WindowTokens/8).
	ReserveTokens int
	// Lessons is how many lessons (memory kind "lesson") of a named
	// agent, relevant to the task, are recalled into its system prompt at
	// the start (0: none). The recall is a journaled call of the run.
	Lessons int
	// Distill has a finished run's transcript distilled into at most three
	// lessons (one more model call, journaled and charged like the
	// others), stored in a named agent's memory for its later runs
	// (Result.Lessons).
	Distill bool
}

// State is what an agent process exposes to snapshots
// (kernel.Process.SetState): its task, its step budget and its journaled
// run. ImageMain goes on from it after a restore.
type State struct {
	Task     string `json:"task"`
	MaxSteps int    `json:"max_steps,omitempty"`
	// System, Persona and Tools are ProcessOptions' (MainOptions'): a
	// restored agent goes on with the same prompt and tools.
	System  string   `json:"system,omitempty"`
	Persona string   `json:"persona,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	// Memory is ProcessOptions' paging, lessons and distillation.
	Memory MemorySettings `json:"memory,omitzero"`
	// Run is the journal run of the loop ("" before it began).
	Run string `json:"run,omitempty"`
	// MemoryName is the memory the agent pages into, recalls its lessons
	// from and distills into, set by its first incarnation: its process
	// name, or, unnamed, its run's ephemeral memory (RunMemory). Every
	// later incarnation (a restart, a restore, under another name too)
	// uses it, so that its journaled calls repeat byte for byte.
	MemoryName string `json:"memory_name,omitempty"`
}

// RunMemory is the memory name of an unnamed agent's run: ephemeral (kept
// in the node's memory only), shared by the run's incarnations, and
// dropped when the run ends (ok or failed), never when an incarnation is
// interrupted (its run stays resumable).
func RunMemory(run string) string { return memory.EphemeralPrefix + "run:" + run }

// MemorySettings are an agent's use of the node's memory
// (ProcessOptions' WindowTokens, ReserveTokens, Lessons, Distill).
type MemorySettings struct {
	WindowTokens  int  `json:"window_tokens,omitempty"`
	ReserveTokens int  `json:"reserve_tokens,omitempty"`
	Lessons       int  `json:"lessons,omitempty"`
	Distill       bool `json:"distill,omitempty"`
}

// MainOptions configure Main and ImageMain. Node, Model and Journal are
// required.
type MainOptions struct {
	Node     Node
	Model    driver.Device
	Journal  *journal.Journal
	MaxSteps int
	PII      *pii.Tokenizer
	// System, Persona and Tools are ProcessOptions' (ImageMain takes them
	// from the restored State).
	System  string
	Persona string
	Tools   []string
	// Memory is how the agent uses the node's memory (ImageMain takes it
	// from the restored State).
	Memory MemorySettings
	// Done, when set, is told each incarnation's result: the Result and
	// the loop's error, or ErrInterrupted when the incarnation ended
	// before the loop did (killed, crashed, shut down: its run stays
	// resumable).
	Done func(Result, error)
}

// ErrInterrupted is what MainOptions.Done is told when an incarnation
// ended before its loop did (killed, crashed, shut down): the run is
// left unfinished for the next incarnation to resume.
var ErrInterrupted = errors.New("agent: interrupted before the loop ended; its run stays resumable")

// Main returns the body of an agent process running task, a proc.Main:
// spawn it through a proc.Spawner, or wrap it with kernel.MainOf for a
// kernel.ChildSpec under kernel.Supervise.
//
// Restart means resume: every incarnation of the returned Main (a
// supervisor restarts the same Main) first looks for the run its previous
// incarnation left unfinished (crashed, killed) and resumes it from the
// journal: the recorded model answers AND the recorded tool calls are
// answered from the journal, in order, up to the crash point (no model
// request is sent again, no tool call is performed again), then the loop
// goes on live, appending to the same run. A run that ended (the model
// answered, the step budget, a failure of the loop) is not resumed: the
// next incarnation begins a new run.
//
// What is performed again: only the one call in flight at the crash (a
// model request sent whose answer was not journaled, a tool call that had
// not returned): it is not in the journal, so the resumed loop makes it
// again. Calls are journaled durably (committed before their result is
// used), so nothing that returned is lost.
//
// The incarnation exposes its State (task, max_steps, run) with
// kernel.Process.SetState, so that a snapshot of it restores (ImageMain)
// into a process that resumes the same run.
func Main(task string, opts MainOptions) proc.Main {
	var mu sync.Mutex
	var last string // the run the previous incarnation began
	return func(ctx context.Context, p proc.Process) error {
		mu.Lock()
		run := last
		mu.Unlock()
		st := State{Task: task, MaxSteps: opts.MaxSteps, System: opts.System, Persona: opts.Persona, Tools: opts.Tools, Memory: opts.Memory, Run: run}
		return runIncarnation(ctx, p, st, opts, func(id string) {
			mu.Lock()
			last = id
			mu.Unlock()
		})
	}
}

// ImageMain is the agent image (registered as Image): a process started
// from a snapshot (kernel.Kernel.Restore) reads its State and resumes its
// run from the journal as Main's restart does; a process spawned by name
// with no state fails, saying so. Each incarnation resumes the run its
// state names, so a supervised restart of an image process resumes too.
func ImageMain(opts MainOptions) proc.Main {
	return func(ctx context.Context, p proc.Process) error {
		var st State
		if raw := p.State(); len(raw) > 0 {
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("agent: the process state is not an agent's: %w", err)
			}
		}
		if st.Task == "" {
			return errors.New("agent: the agent image needs its task in the process state (restore an agent's snapshot, or run agents with RunProcess)")
		}
		if opts.MaxSteps == 0 {
			opts.MaxSteps = st.MaxSteps
		}
		return runIncarnation(ctx, p, st, opts, nil)
	}
}

// runIncarnation runs one incarnation of the agent: it resumes st.Run when
// that run is unfinished, else begins a new run.
func runIncarnation(ctx context.Context, p proc.Process, st State, opts MainOptions, began func(string)) error {
	if opts.Node == nil || opts.Model == nil || opts.Journal == nil {
		return errors.New("agent: an agent process needs a Node, a Model and a Journal")
	}
	done := func(res Result, err error) {
		if opts.Done != nil {
			opts.Done(res, err)
		}
	}
	if err := memory.CheckProcessName(p.Name()); err != nil {
		done(Result{}, err)
		return err
	}
	tools, err := opts.Node.Tools(p, st.Tools...)
	if err != nil {
		done(Result{}, err)
		return err
	}
	store := opts.Node.Memory()
	host := modelHost(opts, store)
	claimed, err := openRun(ctx, p, &st, opts)
	if err != nil {
		done(Result{}, err)
		return err
	}
	defer claimed.release()
	run, record, task := claimed.run, claimed.record, claimed.task
	if began != nil {
		began(run.ID())
	}
	st.Run = run.ID()
	if st.MemoryName == "" {
		st.MemoryName = cmp.Or(p.Name(), RunMemory(run.ID()))
	}
	memName := st.MemoryName
	if store != nil {
		opts.Node.BindMemory(p, memName)
	}
	state, _ := json.Marshal(st)
	_ = p.SetState(state)
	// Every journaled call of the run (the lessons recalled, model
	// requests, tool calls, the distillation) is numbered in the order it
	// is made, so that a resumed incarnation, making them in the same
	// order, meets them in the journal.
	rn := renumber()
	host = driver.Chain(host, rn, opts.PII.ModelMiddleware(), record)
	tooljournal := func(next driver.Host) driver.Host { return rn(record(next)) }
	named := !strings.HasPrefix(memName, memory.EphemeralPrefix) && store != nil
	fail := func(err error) error {
		_ = run.End(journal.StatusFailed, nil, nil)
		if store != nil {
			store.Drop(memName)
		}
		done(Result{}, err)
		return err
	}
	system, err := systemPrompt(ctx, host, st, memName, task, named)
	if err != nil {
		return fail(err)
	}
	paging, err := processPaging(st.Memory, opts.Node, memName, run.ID())
	if err != nil {
		return fail(err)
	}
	charge := charger(p, claimed.replayed)
	tracer := telemetry.Tracer(opts.Node.TracerProvider(), instrumentation)
	ctx, span := startAgentSpan(ctx, tracer, p, run.ID(), st.Persona)
	if sc := span.SpanContext(); sc.HasTraceID() {
		run.SetTraceID(sc.TraceID().String()) // a resumed run keeps the trace it began in
	}
	res, runErr := Run(ctx, Options{LLM: host, Tools: tools, System: system, MaxSteps: st.MaxSteps, PII: opts.PII, Journal: tooljournal, Paging: paging, Charge: charge,
		Tracer: tracer, CaptureContent: opts.Node.CaptureContent()}, task)
	if runErr == nil && st.Memory.Distill && named && res.Reason == ReasonAnswer && ctx.Err() == nil {
		runErr = distill(ctx, host, store, memName, run.ID(), task, &res, charge)
	}
	endAgentSpan(span, res, runErr, opts.Node.CaptureContent())
	if ctx.Err() != nil || p.Context().Err() != nil {
		// Killed, shut down, or the caller gave up: not an end of the loop.
		// The run stays resumable.
		_ = run.Interrupt("cancelled: the agent's process ended before its loop did")
		done(res, ErrInterrupted)
		return runErr
	}
	endRun(run, res, runErr)
	if store != nil {
		store.Drop(memName) // an unnamed agent's run memory ends with its run (a named one is kept)
	}
	done(res, runErr)
	return runErr
}

// modelHost is the host of the run's model calls and, when store is not
// nil, of its lessons, below the journal. The lessons are tokenized there,
// like a data driver's answers: an operator's lesson may hold personal data.
func modelHost(opts MainOptions, store *memory.Store) driver.Host {
	mux := driver.Mux{llm.Driver: opts.Model}
	if store != nil {
		mux[memory.Driver] = memory.LessonsDevice(store)
	}
	return driver.Chain(mux, opts.PII.Middleware(memory.Driver))
}

// claimedRun is the journal run an incarnation works on, claimed by its
// process.
type claimedRun struct {
	run      *journal.Run
	record   driver.Middleware // the journal's: records, or answers from the recording
	replayed int               // the model answers the journal holds (paid already)
	release  func()            // releases the claim
	task     string            // the task as journaled (tokenized)
}

// openRun resumes st.Run when it is an unfinished agent run, else begins a
// new run of st.Task, tokenized first: the task is journaled and sent to
// the model. A new run's memory is the process's: st.MemoryName is cleared.
func openRun(ctx context.Context, p proc.Process, st *State, opts MainOptions) (claimedRun, error) {
	run, record, replayed, release, err := resumeRun(ctx, p, st, opts)
	if err != nil {
		return claimedRun{}, err
	}
	if run != nil {
		return claimedRun{run: run, record: record, replayed: replayed, release: release, task: st.Task}, nil
	}
	task, err := opts.PII.Text(st.Task)
	if err != nil {
		return claimedRun{}, err
	}
	if run, record, release, err = beginRun(ctx, p, *st, task, opts); err != nil {
		return claimedRun{}, err
	}
	st.MemoryName = ""
	return claimedRun{run: run, record: record, release: release, task: task}, nil
}

// systemPrompt is the run's system prompt: st.System (else SystemPrompt)
// with the lessons recalled for task from the named memory memName, when
// st asks for lessons.
func systemPrompt(ctx context.Context, host driver.Host, st State, memName, task string, named bool) (string, error) {
	system := cmp.Or(st.System, SystemPrompt)
	if !named || st.Memory.Lessons <= 0 {
		return system, nil
	}
	lessons, err := RecallLessons(ctx, host, 0, []string{memName}, task, st.Memory.Lessons)
	if err != nil {
		return "", err
	}
	return WithLessons(system, lessons), nil
}

// resumeRun claims and recovers st.Run when it is an unfinished agent run:
// it returns the run, the journal's middleware, how many model answers the
// journal holds (paid already) and the claim's release; a nil run when
// there is none to resume. st.Task becomes the task as journaled.
func resumeRun(ctx context.Context, p proc.Process, st *State, opts MainOptions) (*journal.Run, driver.Middleware, int, func(), error) {
	nothing := func() {}
	if st.Run == "" {
		return nil, nil, 0, nothing, nil
	}
	meta, err := opts.Journal.Get(st.Run)
	if err != nil || meta.Status != journal.StatusRunning || meta.Kind != Kind {
		return nil, nil, 0, nothing, nil
	}
	release, err := claimRun(ctx, opts.Journal, meta.ID, p)
	if err != nil {
		return nil, nil, 0, nothing, err
	}
	rec, err := opts.Journal.Recover(meta.ID)
	if err != nil {
		release()
		return nil, nil, 0, nothing, fmt.Errorf("agent: resuming run %s: %w", meta.ID, err)
	}
	replayed := 0
	if entries, err := opts.Journal.Entries(meta.ID); err == nil {
		for _, e := range entries {
			if e.Driver == llm.Driver {
				replayed++
			}
		}
	}
	var args struct {
		Task string `json:"task"`
	}
	if json.Unmarshal(meta.Args, &args) == nil && args.Task != "" {
		st.Task = args.Task // as journaled (tokenized): the replayed requests hold it
	}
	return rec.Run().Durable(), rec.Middleware(), replayed, release, nil
}

// beginRun begins and claims a new agent run of task (tokenized).
func beginRun(ctx context.Context, p proc.Process, st State, task string, opts MainOptions) (*journal.Run, driver.Middleware, func(), error) {
	meta := map[string]string{"task": task}
	if st.Persona != "" {
		meta["persona"] = st.Persona
	}
	args, _ := json.Marshal(meta)
	run, err := opts.Journal.Begin(journal.RunMeta{Kind: Kind, Args: args})
	if err != nil {
		return nil, nil, nil, err
	}
	run.Durable()
	release, err := claimRun(ctx, opts.Journal, run.ID(), p)
	if err != nil { // a new run: nobody else can hold it
		_ = run.End(journal.StatusFailed, nil, nil)
		return nil, nil, nil, err
	}
	return run, run.Middleware(), release, nil
}

// charger charges each answer's usage to p: the first replayed answers,
// paid by an earlier incarnation, whose account (and every ancestor's) was
// charged then, are counted on p's own account only, so that its limit
// covers the whole run.
func charger(p proc.Process, replayed int) func(llm.Usage) error {
	charged := 0
	return func(u llm.Usage) error {
		charged++
		if charged <= replayed {
			acct := p.Account()
			acct.Carry(capability.Limits{capability.LLMTokens: acct.Used(capability.LLMTokens) + float64(u.TotalTokens), capability.CostUSD: acct.Used(capability.CostUSD) + u.CostUSD})
			return nil
		}
		if err := p.Charge(capability.LLMTokens, float64(u.TotalTokens)); err != nil {
			return err
		}
		return p.Charge(capability.CostUSD, u.CostUSD)
	}
}

// endRun ends run with the loop's outcome: failed on an error or when the
// loop stopped without an answer (the run did not do its job), else ok.
func endRun(run *journal.Run, res Result, runErr error) {
	out, _ := json.Marshal(res)
	status := journal.StatusOK
	var errJSON json.RawMessage
	switch {
	case runErr != nil:
		status = journal.StatusFailed
		errJSON, _ = json.Marshal(map[string]string{"message": runErr.Error()})
	case res.Reason != ReasonAnswer:
		status = journal.StatusFailed
		errJSON, _ = json.Marshal(map[string]string{"message": fmt.Sprintf("the agent stopped without an answer (%s) after %d steps", res.Reason, res.Steps)})
	}
	_ = run.End(status, out, errJSON)
}

// RunProcess runs task as a new agent process of opts.Node: Run, with the
// kernel tools bound to that process (its capabilities, its quota), each
// answer's usage charged to its llm_tokens and cost_usd, and its model
// and tool calls journaled under a run of kind "agent" (ended ok or failed
// with the Result). The process's image is Image and its body Main's.
//
// IMPORTANT: it returns when the process has ended, so the Result is
// complete; ctx ending cancels the agent, which then ends. A process that
// ends other than normally (killed, over its quota) is an error even when
// the loop itself reported none.
func RunProcess(ctx context.Context, task string, opts ProcessOptions) (Result, error) {
	if opts.Node == nil || opts.Model == nil || opts.Journal == nil {
		return Result{}, errors.New("agent: RunProcess needs a Node, a Model and a Journal")
	}
	var res Result
	var runErr error
	callerCtx := ctx
	main := Main(task, MainOptions{Node: opts.Node, Model: opts.Model, Journal: opts.Journal, MaxSteps: opts.MaxSteps, PII: opts.PII,
		System: opts.System, Persona: opts.Persona, Tools: opts.Tools,
		Memory: MemorySettings{WindowTokens: opts.WindowTokens, ReserveTokens: opts.ReserveTokens, Lessons: opts.Lessons, Distill: opts.Distill},
		Done:   func(r Result, err error) { res, runErr = r, err }})
	spawn := opts.Node.Processes().SpawnProcess
	if opts.Parent != nil {
		spawn = opts.Parent.SpawnProcess
	}
	finished := make(chan struct{}) // closed when the body has returned: res is then complete
	p, err := spawn(func(ctx context.Context, p proc.Process) error {
		defer close(finished)
		// The agent's spans continue the caller's trace.
		ctx = trace.ContextWithSpanContext(ctx, trace.SpanContextFromContext(callerCtx))
		// The agent stops when its process ends or its caller gives up.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(callerCtx, cancel)
		defer stop()
		return main(ctx, p)
	}, proc.SpawnOptions{Name: opts.Name, Image: cmp.Or(opts.Image, Image), Grants: WithLLM(opts.Grants), Quota: opts.Quota})
	if err != nil {
		return Result{}, err
	}
	// Wait for the body itself, so that res is complete: a process ended
	// from outside (killed, over its quota) is done before its body has
	// returned (the caller's ctx ending cancels the agent, which then ends).
	<-finished
	<-p.Done()
	reason, _ := p.Reason()
	if errors.Is(runErr, ErrInterrupted) {
		runErr = nil
	}
	if runErr == nil && reason.Kind != proc.Normal {
		runErr = fmt.Errorf("agentos: the agent process ended: %s", reason)
	}
	return res, runErr
}

// WithLLM returns grants with the llm right added when missing: an agent
// asks its model under it.
func WithLLM(grants []capability.Grant) []capability.Grant {
	if !slices.ContainsFunc(grants, func(g capability.Grant) bool { return g.Right == capability.LLM }) {
		grants = append(slices.Clone(grants), capability.Grant{Right: capability.LLM})
	}
	return grants
}

// processPaging is the paging of an agent process: its pages go to the
// node's memory under the agent's memory name (State.MemoryName), tagged "page" and with
// the tools the turn called, and carry the agent's run id.
func processPaging(opts MemorySettings, n Node, name, run string) (Paging, error) {
	if opts.WindowTokens <= 0 {
		return Paging{}, nil
	}
	store := n.Memory()
	if store == nil {
		return Paging{}, errors.New("agent: WindowTokens is set but the node has no memory store to page into (kerneltools.Options.Memory)")
	}
	return Paging{WindowTokens: opts.WindowTokens, ReserveTokens: opts.ReserveTokens, PageOut: func(_ context.Context, pages []Page) ([]string, error) {
		items := make([]memory.Item, len(pages))
		for i, pg := range pages {
			items[i] = memory.Item{Kind: memory.Page, Text: pg.Text, Tags: append([]string{"page"}, pg.Tools...), Run: run}
		}
		stored, _, err := store.RememberAll(name, items)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(stored))
		for i, it := range stored {
			ids[i] = it.ID
		}
		return ids, nil
	}}, nil
}

// distill stores the lessons of the finished run res in agent's memory.
func distill(ctx context.Context, host driver.Host, store *memory.Store, agent, run, task string, res *Result, charge func(llm.Usage) error) error {
	lessons, usage, err := Distill(ctx, host, 0, Transcript(task, *res))
	if err != nil {
		return err
	}
	res.Usage.PromptTokens += usage.PromptTokens
	res.Usage.CompletionTokens += usage.CompletionTokens
	res.Usage.TotalTokens += usage.TotalTokens
	res.Usage.CostUSD += usage.CostUSD
	if err := charge(usage); err != nil {
		return err
	}
	items := make([]memory.Item, len(lessons))
	for i, l := range lessons {
		items[i] = memory.Item{Kind: memory.Lesson, Text: l, Tags: []string{"distilled"}, Run: run}
	}
	if _, _, err := store.RememberAll(agent, items); err != nil {
		return fmt.Errorf("agent: keeping the distilled lessons: %w", err)
	}
	res.Lessons = lessons
	return nil
}

// claims are the agent runs an incarnation is writing, in this OS process.
var claims = struct {
	sync.Mutex
	m map[claimKey]*claim
}{m: map[claimKey]*claim{}}

type claimKey struct {
	j   *journal.Journal
	run string
}

type claim struct {
	p        proc.Process
	released chan struct{}
}

// ErrRunHeld: another live incarnation is writing the agent run (a
// snapshot taken without --kill and restored, one snapshot restored
// twice): a second writer would interleave its calls with the first's.
var ErrRunHeld = errors.New("agent: the run is being written by another live incarnation")

// claimRun claims run for p's incarnation, exclusively in this process,
// until release (IMPORTANT: call it when the incarnation ends). A holder
// whose process has ended (killed, crashed: its body is still unwinding)
// is waited for; a live holder fails the claim with ErrRunHeld.
func claimRun(ctx context.Context, j *journal.Journal, run string, p proc.Process) (release func(), err error) {
	k := claimKey{j, run}
	for {
		claims.Lock()
		c := claims.m[k]
		if c == nil {
			c = &claim{p: p, released: make(chan struct{})}
			claims.m[k] = c
			claims.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					claims.Lock()
					delete(claims.m, k)
					claims.Unlock()
					close(c.released)
				})
			}, nil
		}
		claims.Unlock()
		select {
		case <-c.p.Done():
		default:
			return nil, fmt.Errorf("%w: run %s is held by process %d (%s), alive: kill one of them (agentos kill), or restore a snapshot taken with --kill once only", ErrRunHeld, run, c.p.PID(), cmp.Or(c.p.Name(), "unnamed"))
		}
		// The holder's process ended; its body lets go of the run when it
		// returns (it is cancelled).
		t := time.NewTimer(time.Minute)
		select {
		case <-c.released:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
			return nil, fmt.Errorf("%w: run %s: the ended process %d has not let go of it for a minute", ErrRunHeld, run, c.p.PID())
		}
	}
}

// startAgentSpan opens the "invoke_agent {name}" span of an incarnation of
// p running journal run id: gen_ai.agent.name is the process's name
// ("agent" when it has none), gen_ai.agent.id the run, which a resumed
// incarnation shares.
func startAgentSpan(ctx context.Context, tr trace.Tracer, p proc.Process, id, persona string) (context.Context, trace.Span) {
	extra := []attribute.KeyValue{attribute.Int64("agentos.pid", int64(p.PID())), telemetry.ConversationID.String(id)}
	if persona != "" {
		extra = append(extra, attribute.String("agentos.persona", persona))
	}
	name, opts := telemetry.AgentSpan(cmp.Or(p.Name(), Image), id, extra...)
	return tr.Start(ctx, name, opts...)
}

// endAgentSpan records how the loop ended on span and ends it.
func endAgentSpan(span trace.Span, res Result, err error, capture bool) {
	span.SetAttributes(
		attribute.String("agentos.agent.reason", res.Reason),
		attribute.Int("agentos.agent.steps", res.Steps),
		telemetry.UsageInputTokens.Int64(res.Usage.PromptTokens),
		telemetry.UsageOutputTokens.Int64(res.Usage.CompletionTokens),
	)
	switch {
	case err != nil:
		telemetry.FailContent(span, "", err, capture) // a tool's or model's error can quote what it was sent
	case res.Reason != ReasonAnswer:
		telemetry.Fail(span, res.Reason, fmt.Errorf("the agent stopped without an answer (%s) after %d steps", res.Reason, res.Steps))
	}
	span.End()
}

// Node is what an agent process needs of the node: the kernel tools bound
// to a process, its process table, the agents' memory and the telemetry
// settings. The kernel tools' node (kerneltools.Node) implements it; an
// agent reaches it only through these methods.
type Node interface {
	// Tools returns the kernel tools bound to p (names: a selection).
	Tools(p proc.Process, names ...string) ([]kerneltool.Tool, error)
	// Processes is the process table the agent's process is spawned on
	// (the node's kernel).
	Processes() proc.Table
	// Memory is the agents' memory (nil: none configured).
	Memory() *memory.Store
	// BindMemory binds the memory name of p's remember, recall and forget.
	BindMemory(p proc.Process, name string)
	// TracerProvider receives the agent's spans (nil: the global one).
	TracerProvider() trace.TracerProvider
	// CaptureContent says whether spans record GenAI content.
	CaptureContent() bool
}
