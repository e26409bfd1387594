package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync/atomic"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/forge/forgerun"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/pii"
	"github.com/agentos-run/agentos/telemetry"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Forge. Registry, Checker, Executor, Jail and Git are
// required.
type Options struct {
	// LLM answers the forge's chat requests (llm.Client.Device()). nil: the
	// forge only reuses; a spec no registered tool fits fails with
	// ErrNoModel (reuse needs no model).
	LLM driver.Device
	// Registry is the registry actor's client: searched for a tool to
	// reuse, asked whether a candidate's path is taken.
	Registry *regclient.Client
	// Threshold is the search score from which a tool is reused (0:
	// registry.DefaultThreshold; the node passes its registry's).
	Threshold float64
	// Checker runs check_tool on every candidate.
	Checker *check.Checker
	// Executor runs every candidate's tests in the sandbox: the executor
	// actor's client (execclient.Client), so that the tests run through the
	// executor actor, with the forge's caller's rights.
	Executor Runner
	// Jail is the tool root (Clean empties its staging directory of what
	// an older version, which wrote candidates there, left behind).
	Jail *vfs.Jail
	// Journal records every LLM call and test run of a forge under the
	// forge's run, so a crashed forge resumes without paying twice (nil:
	// not journaled).
	Journal *journal.Journal
	// Git is the git actor's client: it writes a forged tool and its tests
	// (the git actor registers, commits and pushes them).
	Git *gitclient.Client
	// Charger charges the model usage of a forge made for a process (the
	// forge actor's Run and Resume with a caller) to that process's quota;
	// nil: nothing is charged for such forges.
	Charger Charger
	// MaxAttempts bounds the generate-check-test loop (0: 3).
	MaxAttempts int
	// ModelRetries is how many times a transient model error (the server
	// unreachable, 5xx, 429, a timeout) is asked again within one attempt,
	// after 1 s, 2 s, 4 s ... (or the server's Retry-After); each try is a
	// journaled call. 0: 2; negative: none.
	ModelRetries int
	// PII tokenizes what reaches the model: every chat request (above the
	// journal, so it records tokens) and the test runs' output and errors
	// (below it). nil: nothing is tokenized.
	PII *pii.Tokenizer
	// Logger receives progress (nil: slog.Default()).
	Logger *slog.Logger
	// TracerProvider receives an "invoke_agent forge" span per forge, the
	// parent of its model calls' and test runs' spans (see package
	// telemetry). nil: the OpenTelemetry global.
	TracerProvider trace.TracerProvider
	// CaptureContent records a failed forge's error text on its span (it
	// can quote the spec, the model's code or a test's output: personal
	// data). false: only the error's stable error.type (see
	// telemetry.FailContent).
	CaptureContent bool
	// Lessons answers the "memory" driver's "lessons" operation (the
	// node's is memory.LessonsDevice over the agents' memory): before its
	// first model request a forge asks it, as a journaled call, for the
	// lessons (memory kind "lesson") of its caller's agent and of the
	// agent "forge" relevant to the spec, and adds them to its system
	// prompt. nil, or LessonsLimit 0: no lessons are recalled.
	Lessons driver.Device
	// LessonsLimit is how many lessons at most.
	LessonsLimit int
}

// ForgeMemory is the agent whose lessons every forge recalls, besides its
// caller's: lessons about forging that operators (agentos memory remember
// --kind lesson forge ...) or agents share.
const ForgeMemory = "forge"

// Runner runs a tool on the executor actor: *execclient.Client.
type Runner interface {
	Run(ctx context.Context, req execclient.RunRequest) (execclient.Result, string, error)
}

// Charger charges amount of meter to the quota of the kernel process pid
// (and its ancestors). A refused charge (*capability.QuotaError, or the
// process has ended) stops the forge with that error. The node's is the
// kernel's Charge; IMPORTANT: it is called from the forge's goroutine, once
// per model answer, for capability.LLMTokens then capability.CostUSD.
type Charger interface {
	Charge(ctx context.Context, pid uint64, meter capability.Meter, amount float64) error
}

// HomeCharger is a Charger that also reaches processes living on another
// node of a cluster (execclient.Caller.Home): the node's sends Charge to the
// kernel actor at that address. A forge for a caller with a Home charges
// through ChargeAt when the Charger is one, and refuses to charge (the
// forge fails) when it is not: a quota is never charged on the wrong node.
type HomeCharger interface {
	Charger
	ChargeAt(ctx context.Context, home string, pid uint64, meter capability.Meter, amount float64) error
}

// Forge runs the reuse-or-forge closed loop.
type Forge struct {
	opts   Options
	tracer trace.Tracer
	// offline: a replay's loop (see Replay), which keeps nothing.
	offline bool
}

// New returns a forge.
func New(opts Options) (*Forge, error) {
	if opts.Registry == nil || opts.Checker == nil || opts.Executor == nil || opts.Jail == nil || opts.Git == nil {
		return nil, fmt.Errorf("%w: a forge needs a registry client, a checker, an executor client, a jail and a git client", ErrOptions)
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 3
	}
	switch {
	case opts.ModelRetries == 0:
		opts.ModelRetries = defaultModelRetries
	case opts.ModelRetries < 0:
		opts.ModelRetries = 0
	}
	if opts.Threshold <= 0 {
		opts.Threshold = regclient.DefaultThreshold
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	f := &Forge{opts: opts, tracer: telemetry.Tracer(opts.TracerProvider, instrumentation)}
	f.Clean() // candidates a crash left staged
	return f, nil
}

// Attempt is one generate-check-test round.
type Attempt struct {
	N    int    `json:"n"`
	Path string `json:"path,omitempty"`
	// Errors are what failed (check findings, test failures), as sent back
	// to the model; empty for the attempt that passed.
	Errors []string `json:"errors,omitempty"`
	Passed bool     `json:"passed"`
}

// Result is what forge_tool returns.
type Result struct {
	// Reused says an existing tool fit the spec (Score >= the threshold).
	Reused bool    `json:"reused"`
	Path   string  `json:"path"`
	Score  float64 `json:"score,omitempty"`
	// Attempts are the rounds of a forge (none when reused).
	Attempts []Attempt `json:"attempts,omitempty"`
	// Tests is the path of the forged tool's tests.
	Tests string `json:"tests,omitempty"`
	// Commit persisted the tool ("" without Git).
	Commit string `json:"commit,omitempty"`
	// RunID is the forge's journal run.
	RunID string `json:"run_id,omitempty"`
	// Usage is what the model calls cost.
	Usage llm.Usage `json:"usage"`
	// Gate is the registration gate's report when keeping the tool
	// replaced an existing tool source (nil for a new tool, which is what
	// a forge makes: it never takes a path holding another registered
	// tool). Set also when the gate refused to keep it (the error wraps
	// gate.ErrBlocked; nothing was written).
	Gate *gate.Report `json:"gate,omitempty"`
}

// Charge is told the usage of every model answer (the caller's quota); an
// error stops the forge.
type Charge func(llm.Usage) error

// Forge reuses a registered tool that fits spec, or forges one: the model
// writes a tool and its tests, check_tool and the tests judge them, the
// errors go back to the model, at most MaxAttempts times; only a tool that
// passes both is written (registered and persisted). The tests run with no
// caller restriction (the operator's forge); the forge actor forges for a
// process with that process's rights (see Run in forgepb).
func (f *Forge) Forge(ctx context.Context, spec string, charge Charge) (Result, error) {
	return f.forge(ctx, "", spec, nil, charge)
}

// forge is Forge for caller (nil: the operator). request (may be empty)
// is the key of the request that caused the forge: kept with its journal
// run (forgerun.RequestOf), so that a retry of that request, answered from the
// journal by another activation of the spec, is told it forged.
func (f *Forge) forge(ctx context.Context, request, spec string, caller *execclient.Caller, charge Charge) (res Result, err error) {
	ctx, span := f.startSpan(ctx, "", spec)
	defer func() { endSpan(span, res, err, f.opts.CaptureContent) }()
	return f.forgeRun(ctx, request, spec, caller, charge)
}

// forgeRun is forge under its span.
func (f *Forge) forgeRun(ctx context.Context, request, spec string, caller *execclient.Caller, charge Charge) (Result, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Result{}, fmt.Errorf("%w: the spec is empty; say what the tool must do", ErrSpec)
	}
	// The spec is journaled and sent to the model: tokenized first.
	spec, err := f.opts.PII.Text(spec)
	if err != nil {
		return Result{}, fmt.Errorf("forge: tokenizing the spec: %w", err)
	}
	if res, reused, err := f.reuse(ctx, spec); reused || err != nil {
		return res, err
	}
	var host driver.Host = f.devices(caller)
	var run *journal.Run
	agents := lessonAgents(caller, f.lessons())
	if f.opts.Journal != nil {
		if run, err = f.journalForge(ctx, spec, request, agents); err != nil {
			return Result{}, err
		}
		host = driver.Chain(host, run.DurableFor(paid).Middleware())
	}
	// Above the journal: it records the tokenized requests.
	host = driver.Chain(host, f.opts.PII.ModelMiddleware())
	if run == nil {
		return f.loop(ctx, host, spec, agents, charge, nil)
	}
	res, err := f.loop(ctx, host, spec, agents, charge, run)
	return res, f.closeRun(ctx, run, &res, err)
}

// reuse looks in the registry for a tool that does what spec says: reused
// is true when the best one scores at least Options.Threshold. With no
// model to forge a new tool, a spec no tool matches well enough is an
// ErrNoModel naming the best candidate.
func (f *Forge) reuse(ctx context.Context, spec string) (res Result, reused bool, err error) {
	hits, err := f.opts.Registry.Search(ctx, spec, 1)
	if err != nil {
		return Result{}, false, fmt.Errorf("forge: searching the registry for a tool to reuse: %w", err)
	}
	if len(hits) > 0 && hits[0].Score >= f.opts.Threshold {
		return Result{Reused: true, Path: hits[0].Path, Score: hits[0].Score}, true, nil
	}
	if f.opts.LLM != nil {
		return Result{}, false, nil
	}
	best := "no registered tool matches it"
	if len(hits) > 0 {
		best = fmt.Sprintf("the best registered tool, %s, scores %.2f, under the reuse threshold %.2f", hits[0].Path, hits[0].Score, f.opts.Threshold)
	}
	return Result{}, false, fmt.Errorf("%w: %s; forging a new tool needs a model (or export AGENTOS_LLM_BASE_URL and AGENTOS_LLM_MODEL)", ErrNoModel, best)
}

// journalForge begins the journal run of a forge of spec, caused by
// request (may be empty), asking for the lessons of agents, in the trace
// of ctx's span (the forge's invoke_agent span).
func (f *Forge) journalForge(ctx context.Context, spec, request string, agents []string) (*journal.Run, error) {
	// A resumed forge asks again (answered from the journal) only if this
	// one asked: runs recorded before lessons existed resume as they were.
	// It asks for the same agents' lessons whoever resumes it (the default
	// process, agentos recover with no caller): the request must be the
	// recorded one.
	args := forgerun.Args{Spec: spec, Request: request, Lessons: len(agents) > 0, LessonAgents: agents}
	run, err := f.opts.Journal.Begin(journal.RunMeta{Kind: Kind, Args: args.Encode(), TraceID: traceIDOf(ctx)})
	if err != nil {
		return nil, fmt.Errorf("journaling the forge: %w", err)
	}
	return run, nil
}

// closeRun ends the forge's journal run with the loop's outcome (res,
// err) and returns the forge's error, naming the run. A forge cancelled
// (shutdown, crash, its caller gone) is left interrupted: it stays
// resumable.
func (f *Forge) closeRun(ctx context.Context, run *journal.Run, res *Result, err error) error {
	res.RunID = run.ID()
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("forge run %s: %w", run.ID(), err) // agentos trace / replay take the id
	}
	if ctx.Err() != nil || errors.Is(err, ErrCallerGone) {
		interrupted(run)
		return err
	}
	return f.endRun(ctx, run, *res, err)
}

// paid says which of a forge's calls are durable: the model's answers,
// paid for, each on disk before it is used, so that a crash can never make
// the resumed forge ask again. Its other calls (the path checks, the test
// runs, the lessons) are committed with the next answer or the end: a
// crash before then has the resumed forge perform them again, which they
// allow (taken counts the forge's own tool as not taken; the tests judge
// the same code).
func paid(c driver.Call) bool { return c.Driver == llm.Driver }

// Kind is the journal kind of forge runs; their record (the arguments'
// codec: SpecOf, RequestOf) is the leaf forgerun's.
const Kind = forgerun.Kind

// Resume continues the forge run id that a crash interrupted: the recorded
// model answers and test results are served from the journal (no model
// request is sent twice), then the loop goes on live.
func (f *Forge) Resume(ctx context.Context, id string, charge Charge) (Result, error) {
	return f.resume(ctx, id, nil, charge)
}

// resume is Resume for caller (nil: the operator).
func (f *Forge) resume(ctx context.Context, id string, caller *execclient.Caller, charge Charge) (res Result, err error) {
	ctx, span := f.startSpan(ctx, id, "")
	defer func() { endSpan(span, res, err, f.opts.CaptureContent) }()
	return f.resumeRun(ctx, id, caller, charge)
}

// resumeRun is resume under its span.
func (f *Forge) resumeRun(ctx context.Context, id string, caller *execclient.Caller, charge Charge) (Result, error) {
	if f.opts.Journal == nil {
		return Result{}, fmt.Errorf("%w: resuming needs the journal", ErrOptions)
	}
	if f.opts.LLM == nil {
		return Result{}, fmt.Errorf("%w: forge run %s cannot resume", ErrNoModel, id)
	}
	rec, err := f.opts.Journal.Recover(id)
	if err != nil {
		return Result{}, err
	}
	meta := rec.Meta()
	if meta.Kind != Kind {
		return Result{}, fmt.Errorf("%w: run %s is of kind %s, not a forge", ErrSpec, id, meta.Kind)
	}
	asked, _ := forgerun.ArgsOf(meta)
	if asked.Spec == "" {
		return Result{}, fmt.Errorf("%w: run %s has no spec to resume", ErrSpec, id)
	}
	rec.Run().DurableFor(paid).SetTraceID(traceIDOf(ctx)) // kept only if the run began untraced
	host := driver.Chain(f.devices(caller), f.opts.PII.ModelMiddleware(), rec.Middleware())
	agents := asked.LessonAgents
	if asked.Lessons && len(agents) == 0 {
		agents = lessonAgents(caller, true) // recorded before lesson_agents was saved
	} else if !asked.Lessons {
		agents = nil
	}
	res, err := f.loop(ctx, host, asked.Spec, agents, charge, rec.Run())
	res.RunID = id
	if ctx.Err() == nil && !errors.Is(err, ErrCallerGone) {
		err = f.endRun(ctx, rec.Run(), res, err)
	} else {
		interrupted(rec.Run())
	}
	return res, err
}

// interrupted records that a cancelled forge stopped here and stays
// resumable: on a shared journal its claim is let go, so that another node
// may resume it at once (a node that dies lets it go when its lease
// lapses).
func interrupted(run *journal.Run) {
	_ = run.Interrupt("cancelled: the forge's caller or node stopped it")
}

// endAttempts bounds how often endRun writes a forge's end that the
// journal failed to write (its database restarting), endBackoff the wait
// before the first retry (doubling).
const (
	endAttempts = 4
	endBackoff  = 500 * time.Millisecond
)

// endRun records how the forge ended and returns the forge's error, or,
// for a forge that passed, the journal's error when the end could not be
// written (logged too): the tool is kept, the run stays "running" and
// resumable, and its resume replays the recorded calls and finds the tool
// already committed (writing the same bytes makes no second commit).
// A write the journal failed is tried again a few times (a database
// restart takes seconds); one refused because another node claimed the run
// since (journal.ErrClaimed, ErrFenced) is not.
func (f *Forge) endRun(ctx context.Context, run *journal.Run, res Result, err error) error {
	out, _ := json.Marshal(res)
	status, errJSON := journal.StatusOK, json.RawMessage(nil)
	if err != nil {
		status = journal.StatusFailed
		errJSON, _ = json.Marshal(map[string]string{"message": err.Error(), "code": failureCodes.CodeOf(err)})
	}
	var eerr error
	wait := endBackoff
	for attempt := 1; attempt <= endAttempts; attempt++ {
		if eerr = run.End(status, out, errJSON); eerr == nil {
			return err
		}
		if errors.Is(eerr, journal.ErrClaimed) || attempt == endAttempts {
			break
		}
		select {
		case <-ctx.Done():
			attempt = endAttempts
		case <-time.After(wait):
			wait *= 2
		}
	}
	f.opts.Logger.Error("forge: the journal could not record the forge's end; the run stays resumable",
		slog.String("run", run.ID()), slog.String("status", status), slog.String("path", res.Path), slog.String("commit", res.Commit), slog.Any("err", eerr))
	if err != nil {
		return fmt.Errorf("%w (and the journal could not record the forge's end: %w)", err, eerr)
	}
	return fmt.Errorf("forge: the tool %s was kept (commit %s), but the journal could not record the end of forge run %s: %w; the run stays resumable, and resuming it makes no second commit", res.Path, res.Commit, run.ID(), eerr)
}

// candidate is what the model submits.
type candidate struct {
	Code  string `json:"code"` // fields in the order of their JSON names: see llm.Message
	Path  string `json:"path"`
	Tests string `json:"tests"`
}

// lessons reports whether new forges recall lessons.
func (f *Forge) lessons() bool { return f.opts.Lessons != nil && f.opts.LessonsLimit > 0 }

// lessonAgents are the memories a forge for caller recalls lessons from
// (nil: it recalls none).
func lessonAgents(caller *execclient.Caller, recall bool) []string {
	if !recall {
		return nil
	}
	agents := []string{ForgeMemory}
	if caller != nil && caller.Name != "" && caller.Name != ForgeMemory {
		agents = append([]string{caller.Name}, agents...)
	}
	return agents
}

// lessonsRequest is the memory driver's "lessons" request.
type lessonsRequest struct {
	Agents []string `json:"agents"`
	Limit  int      `json:"limit"`
	Query  string   `json:"query"`
}

// loop is the closed loop over a host whose calls are journaled. With
// lessonAgents, its first call recalls their lessons about the spec.
//
// holds (nil: none) is asked just before the tool is committed: an error
// (another node claimed the forge's run since) keeps the tool from being
// committed by this node.
func (f *Forge) loop(ctx context.Context, host driver.Host, spec string, lessonAgents []string, charge Charge, holds holder) (Result, error) {
	var seq atomic.Uint64
	call := func(drv, op string, req any, out any) error {
		b, err := driver.Marshal(req) // canonical: journaled as it comes
		if err != nil {
			return err
		}
		resp, err := host.Do(ctx, driver.Call{Seq: seq.Add(1), Driver: drv, Op: op, Request: b})
		if err != nil {
			return err
		}
		return json.Unmarshal(resp, out)
	}
	res := Result{}
	system := systemPrompt
	if len(lessonAgents) > 0 {
		var found struct {
			Lessons []string `json:"lessons"`
		}
		if err := call("memory", "lessons", lessonsRequest{Agents: lessonAgents, Query: spec, Limit: max(f.opts.LessonsLimit, 1)}, &found); err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, fmt.Errorf("forge: recalling lessons about the spec: %w", err)
		}
		if len(found.Lessons) > 0 {
			system += "\n\nLessons from past work (apply when relevant):\n- " + strings.Join(found.Lessons, "\n- ")
		}
	}
	conv := &conversation{system: system, spec: spec}
	for n := 1; n <= f.opts.MaxAttempts; n++ {
		answer, err := ask(ctx, call, conv, f.opts.ModelRetries, n)
		if err != nil {
			return res, err
		}
		res.Usage = addUsage(res.Usage, answer.Usage)
		if charge != nil {
			if err := charge(answer.Usage); err != nil {
				return res, err
			}
		}
		sub := readSubmission(answer)
		att := Attempt{N: n, Path: sub.cand.Path}
		if sub.err == nil {
			att.Errors = f.judge(ctx, sub.cand, call)
		} else {
			att.Errors = []string{sub.err.Error()}
		}
		if ctx.Err() != nil { // interrupted, not judged: the resumed forge judges it
			return res, ctx.Err()
		}
		att.Passed = len(att.Errors) == 0
		res.Attempts = append(res.Attempts, att)
		f.opts.Logger.Info("forge: attempt", slog.Int("n", n), slog.String("path", sub.cand.Path), slog.Int("errors", len(att.Errors)), slog.String("call_form", answer.CallForm))
		if att.Passed {
			return f.keep(ctx, res, sub.cand, holds)
		}
		feedback := fmt.Sprintf("Attempt %d failed. Fix every error and call submit_tool again with the whole tool and tests:\n- %s", n, strings.Join(att.Errors, "\n- "))
		conv.failed(n, answer.Message, sub.replies(feedback), att.Errors)
	}
	var each []string
	for _, a := range res.Attempts {
		each = append(each, fmt.Sprintf("attempt %d: %s", a.N, strings.Join(a.Errors, "; ")))
	}
	return res, fmt.Errorf("%w after %d attempts (%s)", ErrGaveUp, len(res.Attempts), strings.Join(each, " | "))
}

// judge checks the candidate and runs its tests; it returns the errors to
// send back (none: it passed).
func (f *Forge) judge(ctx context.Context, c candidate, call func(drv, op string, req any, out any) error) []string {
	var taken takenAnswer
	if err := call(testDriver, "taken", takenRequest{Path: c.Path, Hash: transpile.Hash([]byte(c.Code))}, &taken); err != nil {
		return []string{err.Error()}
	}
	if taken.Taken {
		return []string{fmt.Sprintf("%s already holds another tool (%q); choose a new path, or reuse that tool", c.Path, taken.Description)}
	}
	chk := f.opts.Checker.Check(c.Path, []byte(c.Code))
	errs := make([]string, 0, len(chk.Errors))
	for _, e := range chk.Errors {
		errs = append(errs, "check_tool: "+e.String())
	}
	for _, w := range chk.Warnings {
		if w.Rule == check.RuleDefaultExport { // a library module may lack one; a tool is run through it
			errs = append(errs, "check_tool: "+w.String())
		}
	}
	if len(errs) > 0 {
		return errs
	}
	var out testOutcome
	if err := call(testDriver, "run", c, &out); err != nil {
		return []string{"running the tests: " + err.Error()}
	}
	if !out.Passed {
		return []string{"tests failed: " + out.Error}
	}
	return nil
}

// holder is the journal run a forge records into (*journal.Run): whether
// this node still holds it, and the run and fencing token its commits
// carry.
type holder interface {
	Holds() error
	ID() string
	Fence() int64
}

// keep writes the tool and its tests for good (registry, Git), if the
// forge's run is still this node's (holds). Keeping a tool the upstream
// already holds byte for byte (a resumed forge whose first run committed
// it and failed to record its end) makes no commit: the git actor's write
// of unchanged content is a no-op answering the commit that has it.
func (f *Forge) keep(ctx context.Context, res Result, c candidate, holds holder) (Result, error) {
	res.Path, res.Tests = c.Path, testPath(c.Path)
	if f.offline {
		return res, nil // a replay writes nothing
	}
	write := f.opts.Git.WriteFile
	if holds != nil {
		if err := holds.Holds(); err != nil {
			return res, fmt.Errorf("forge: the tool passed but is not committed by this node: %w", err)
		}
		// The store's own check: a commit whose token is stale by the
		// time it is pushed never reaches the upstream (repo.ErrFenced).
		run, fence := holds.ID(), holds.Fence()
		write = func(ctx context.Context, p string, b []byte) (gitclient.Written, error) {
			return f.opts.Git.WriteFenced(ctx, p, b, run, fence)
		}
	}
	w, err := write(ctx, c.Path, []byte(c.Code))
	res.Gate = w.Gate
	if err != nil {
		return res, fmt.Errorf("forge: the tool passed but could not be kept: %w", err)
	}
	if _, err := write(ctx, res.Tests, []byte(c.Tests)); err != nil {
		return res, fmt.Errorf("forge: the tool was kept but its tests could not be: %w", err)
	}
	res.Commit = w.Commit
	return res, nil
}

func addUsage(a, b llm.Usage) llm.Usage {
	a.PromptTokens += b.PromptTokens
	a.CompletionTokens += b.CompletionTokens
	a.TotalTokens += b.TotalTokens
	a.CostUSD += b.CostUSD
	return a
}

// testPath is where a tool's tests live: tools/math/fib.ts ->
// tools/math/fib.test.ts.
func testPath(p string) string {
	ext := path.Ext(p)
	return strings.TrimSuffix(p, ext) + ".test" + ext
}

// validCandidate checks a candidate's path, code and tests, and returns its
// clean path.
func validCandidate(c candidate) (string, error) {
	clean, err := vfs.Clean(c.Path)
	switch {
	case c.Path == "":
		return "", errors.New("the path is missing: submit_tool needs path (e.g. tools/math/fib.ts), code and tests")
	case err != nil:
		return "", fmt.Errorf("path %q: %v", c.Path, err)
	case !strings.HasPrefix(clean, "tools/") || (path.Ext(clean) != ".ts" && path.Ext(clean) != ".js") || strings.Contains(clean, ".test."):
		return "", fmt.Errorf("path %q must be a .ts file under tools/, e.g. tools/math/fib.ts", c.Path)
	case strings.TrimSpace(c.Code) == "":
		return "", errors.New("the code is empty")
	case strings.TrimSpace(c.Tests) == "":
		return "", errors.New("the tests are empty: every tool ships with tests")
	}
	return clean, nil
}
