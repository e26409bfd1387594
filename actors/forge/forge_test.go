package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/git"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/registry"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/pii"
	"github.com/agentos-run/agentos/vfs"
	"github.com/asynkron/protoactor-go/actor"
)

var quiet = slog.New(slog.DiscardHandler)

var (
	fibCode   = samples.FibForged
	buggyCode = samples.FibForgedBuggy
	fibTests  = samples.FibForgedTests
)

func submit(code string) llmtest.Step {
	args, _ := json.Marshal(map[string]string{"path": "tools/math/fib.ts", "code": code, "tests": fibTests})
	return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "submit_tool", Arguments: string(args)}}}
}

type env struct {
	f   *forge.Forge
	reg *registry.Registry
	j   *journal.Journal
	jl  *vfs.Jail
	sys *actor.ActorSystem
}

func newEnv(t testing.TB, srv *llmtest.Server, root string, threshold ...float64) env {
	t.Helper()
	th := 0.0
	if len(threshold) > 0 {
		th = threshold[0]
	}
	return newEnvWith(t, srv, root, envOptions{threshold: th})
}

// envOptions tune newEnvWith: the executor actor's authority (nil: none),
// the forge's charger, the reuse threshold.
type envOptions struct {
	auth      *capability.Authority
	charger   forge.Charger
	threshold float64
	attempts  int
	pii       *pii.Tokenizer
	lessons   driver.Device
}

func newEnvWith(t testing.TB, srv *llmtest.Server, root string, o envOptions) env {
	t.Helper()
	ex, err := executor.New(executor.Options{Root: root, Isolation: executor.IsolationInProcess, TempDir: t.TempDir(), Limits: executor.Limits{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	jl, err := vfs.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jl.Close() })
	// The registry log in a state directory, as a runtime configures it.
	if err := os.MkdirAll(filepath.Join(root, ".agentos"), 0o700); err != nil {
		t.Fatal(err)
	}
	state, err := vfs.Open(filepath.Join(root, ".agentos"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { state.Close() })
	reg, err := registry.Open(jl, registry.Options{Logger: quiet, State: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	j, err := journal.Open(filepath.Join(root, "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	// The forge reaches the executor, registry and git actors through
	// their clients, as in a node.
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	exPID := sys.Root.Spawn(executor.Props(ex, executor.ActorOptions{Authority: o.auth}))
	regPID := sys.Root.Spawn(registry.Props(reg))
	regClient := regclient.New(sys.Root, regPID)
	gitPID := sys.Root.Spawn(git.Props(git.Options{Jail: jl, Registry: regClient}))
	t.Cleanup(func() {
		for _, pid := range []*actor.PID{gitPID, regPID, exPID} {
			_ = sys.Root.StopFuture(pid).Wait()
		}
	})
	f, err := forge.New(forge.Options{LLM: client.Device(), Registry: regClient, Threshold: o.threshold, Charger: o.charger, Checker: check.New(check.Options{}), Executor: execclient.New(sys.Root, exPID), Jail: jl, Journal: j, Git: gitclient.New(sys.Root, gitPID), MaxAttempts: o.attempts, Logger: quiet, PII: o.pii, Lessons: o.lessons, LessonsLimit: lessonsLimit(o.lessons)})
	if err != nil {
		t.Fatal(err)
	}
	return env{f: f, reg: reg, j: j, jl: jl, sys: sys}
}

// The seed's forge scenario: the first attempt fails its tests, the errors
// go back to the model, the second passes and only then is registered.
func TestForgeSecondAttempt(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{
		submit(buggyCode),
		func() llmtest.Step {
			s := submit(fibCode)
			s.Check = func(r llmtest.Received) error {
				last := r.Messages[len(r.Messages)-1]
				if last.Role != "tool" || !strings.Contains(last.Content, "fib(0) = 1, want 0") {
					return fmt.Errorf("the test failure was not sent back: %+v", last)
				}
				return nil
			}
			return s
		}(),
	})
	defer srv.Close()
	e := newEnv(t, srv, t.TempDir())
	res, err := e.f.Forge(context.Background(), "a tool that returns the n-th Fibonacci number", nil)
	if err != nil {
		t.Fatalf("%v (%+v)", err, res)
	}
	if srv.Err() != nil {
		t.Fatal(srv.Err())
	}
	if res.Reused || res.Path != "tools/math/fib.ts" || len(res.Attempts) != 2 || res.Attempts[0].Passed || !res.Attempts[1].Passed {
		t.Fatalf("result = %+v", res)
	}
	if _, ok := e.reg.Get("tools/math/fib.ts"); !ok {
		t.Fatal("the forged tool is not registered")
	}
	if b, err := e.jl.ReadFile("tools/math/fib.test.ts"); err != nil || string(b) != fibTests {
		t.Fatalf("the tests do not live with the tool: %v", err)
	}
	// A similar spec is reused, not forged again: no model request.
	res, err = e.f.Forge(context.Background(), "fibonacci number", nil)
	if err != nil || !res.Reused || res.Path != "tools/math/fib.ts" || srv.Requests() != 2 {
		t.Fatalf("reuse: %+v %v (requests %d)", res, err, srv.Requests())
	}
}

// A tool that never passes is not kept, and the result lists every attempt.
func TestForgeGivesUp(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{submit(buggyCode), submit(buggyCode), submit(buggyCode)})
	defer srv.Close()
	e := newEnv(t, srv, t.TempDir())
	res, err := e.f.Forge(context.Background(), "a tool that returns the n-th Fibonacci number", nil)
	if !errors.Is(err, forge.ErrGaveUp) || len(res.Attempts) != 3 {
		t.Fatalf("%v %+v", err, res)
	}
	if _, ok := e.reg.Get("tools/math/fib.ts"); ok {
		t.Fatal("a failing tool was registered")
	}
	if _, err := e.jl.ReadFile("tools/math/fib.ts"); !errors.Is(err, vfs.ErrNotFound) {
		t.Fatalf("a failing candidate stayed in the tree: %v", err)
	}
}

// A forge interrupted after its first model answer resumes from the
// journal: the recorded answer is replayed, the model is asked only for
// what was not answered yet.
func TestForgeResumeNoRequestTwice(t *testing.T) {
	root := t.TempDir()
	first := llmtest.NewServer([]llmtest.Step{submit(buggyCode)})
	defer first.Close()
	e := newEnv(t, first, root)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := e.f.Forge(ctx, "a tool that returns the n-th Fibonacci number", func(llm.Usage) error {
		cancel() // the process "dies" right after paying for the first answer
		return context.Canceled
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted forge: %v", err)
	}
	runs, _ := e.j.Unfinished()
	if len(runs) != 1 || runs[0].Kind != forge.Kind {
		t.Fatalf("unfinished runs: %+v", runs)
	}
	e.j.Close()

	second := llmtest.NewServer([]llmtest.Step{submit(fibCode)})
	defer second.Close()
	e2 := newEnv(t, second, root)
	res, err := e2.f.Resume(context.Background(), runs[0].ID, nil)
	if err != nil || !res.Attempts[len(res.Attempts)-1].Passed {
		t.Fatalf("resumed: %+v %v", res, err)
	}
	if first.Requests()+second.Requests() != 2 {
		t.Fatalf("model requests: %d + %d, want 2 in all (none twice)", first.Requests(), second.Requests())
	}
	if runs, _ := e2.j.Unfinished(); len(runs) != 0 {
		t.Fatalf("still unfinished: %+v", runs)
	}
}

func lessonsLimit(d driver.Device) int {
	if d == nil {
		return 0
	}
	return 4
}

// A forge started by a named agent asks for that agent's lessons and the
// forge's; resumed by another caller (the default process, or agentos
// recover with none), it asks for the same agents: its first journaled
// call is the recorded one and it resumes.
func TestForgeResumeKeepsLessonAgents(t *testing.T) {
	root := t.TempDir()
	var asked []string
	lessons := driver.DeviceFunc(func(_ context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		var r struct {
			Agents []string `json:"agents"`
		}
		_ = json.Unmarshal(req, &r)
		asked = append(asked, strings.Join(r.Agents, ","))
		return json.RawMessage(`{"lessons":["prefer iteration"]}`), nil
	})
	first := llmtest.NewServer([]llmtest.Step{submit(buggyCode)})
	defer first.Close()
	e := newEnvWith(t, first, root, envOptions{lessons: lessons})
	ctx, cancel := context.WithCancel(context.Background())
	_, err := forge.ForgeFor(e.f, ctx, "a tool that returns the n-th Fibonacci number", &execclient.Caller{Name: "alice"}, func(llm.Usage) error {
		cancel()
		return context.Canceled
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted forge: %v", err)
	}
	runs, _ := e.j.Unfinished()
	if len(runs) != 1 {
		t.Fatalf("unfinished runs: %+v", runs)
	}
	e.j.Close()

	second := llmtest.NewServer([]llmtest.Step{submit(fibCode)})
	defer second.Close()
	e2 := newEnvWith(t, second, root, envOptions{lessons: lessons})
	res, err := e2.f.Resume(context.Background(), runs[0].ID, nil)
	if err != nil || !res.Attempts[len(res.Attempts)-1].Passed {
		t.Fatalf("resumed: %+v %v", res, err)
	}
	if got := strings.Join(asked, " "); got != "alice,forge" {
		t.Fatalf("lessons asked of the device: %q, want once for alice,forge (the resume answered from the journal)", got)
	}
}

// Issue 24: a forge whose run another resume claimed while it waited on
// the model (its node paused past its lease, and another node took the
// forge over) performs nothing more and commits nothing: its journal
// writes are refused at the store (fencing token), and its End's refusal
// is returned, not dropped.
func TestForgeSupersededKeepsNothing(t *testing.T) {
	root := t.TempDir()
	srv := llmtest.NewServer([]llmtest.Step{submit(fibCode), submit(fibCode)})
	defer srv.Close()
	e := newEnv(t, srv, root)
	var taken *journal.Recovery
	_, err := e.f.Forge(context.Background(), "a tool that returns the n-th Fibonacci number", func(llm.Usage) error {
		// The model's answer is journaled: another resume claims the run now.
		runs, err := e.j.Unfinished()
		if err != nil || len(runs) != 1 {
			t.Fatalf("unfinished runs while forging: %+v %v", runs, err)
		}
		if taken, err = e.j.Recover(runs[0].ID); err != nil {
			t.Fatal(err)
		}
		return nil
	})
	if err == nil || !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("superseded forge: %v, want an error wrapping journal.ErrFenced", err)
	}
	if _, serr := e.jl.Stat("tools/math/fib.ts"); serr == nil {
		t.Fatal("the superseded forge committed the tool")
	}
	if srv.Requests() != 1 {
		t.Fatalf("model requests: %d, want 1 (the superseded forge asks nothing more)", srv.Requests())
	}
	if m := taken.Run().Meta(); m.Status != journal.StatusRunning {
		t.Fatalf("the run after the superseded forge stopped: %s, want running (the new holder's)", m.Status)
	}
}
