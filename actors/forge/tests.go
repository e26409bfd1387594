package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/driver"
)

// testDriver is the forge's own device: running a candidate's tests is a
// journaled call like a model request, so a resumed forge gets the recorded
// outcome instead of running the tests again.
const testDriver = "forge"

type testOutcome struct {
	Error  string   `json:"error,omitempty"` // fields in the order of their JSON names: see llm.Message
	Logs   []string `json:"logs,omitempty"`
	Passed bool     `json:"passed"`
}

// devices is the forge's driver set: the model and the test runner, which
// runs the tests for caller (nil: the operator). The test runs' output and
// errors, which go back to the model, are tokenized here, below the
// journal (Options.PII).
func (f *Forge) devices(caller *execclient.Caller) driver.Host {
	mux := driver.Mux{
		"llm": f.opts.LLM,
		testDriver: driver.DeviceFunc(func(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
			if op == "taken" {
				return f.taken(ctx, req)
			}
			return f.runTests(ctx, caller, op, req)
		}),
	}
	if f.opts.Lessons != nil {
		mux["memory"] = f.opts.Lessons
	}
	// The lessons too: an operator's lesson may hold personal data, and
	// the journal and the model get tokens only.
	return driver.Chain(mux, f.opts.PII.Middleware(testDriver, "memory"))
}

// takenRequest asks whether a candidate's path holds another tool: one
// whose code is not the candidate's (hash).
type takenRequest struct {
	Hash string `json:"hash"`
	Path string `json:"path"`
}

type takenAnswer struct {
	Description string `json:"description,omitempty"`
	Taken       bool   `json:"taken"`
}

// taken answers whether the candidate's path holds another tool. It is a
// journaled call, like the tests: a resumed forge gets the answer its dead
// run got, whatever the registry holds now (that run may itself have kept
// its tool there before it died).
func (f *Forge) taken(ctx context.Context, req json.RawMessage) (json.RawMessage, error) {
	var r takenRequest
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, driver.Errorf(driver.CodeInvalid, "forge.taken: bad request")
	}
	t, ok, err := f.opts.Registry.Get(ctx, r.Path)
	if err != nil {
		return nil, driver.Errorf(driver.CodeIO, "checking whether %s is taken: %v", r.Path, err)
	}
	// The same code at the path is this forge's own tool (kept by an
	// earlier run of it that died before it could end), not another.
	b, _ := driver.Marshal(takenAnswer{Taken: ok && t.Hash != r.Hash, Description: t.Description})
	return b, nil
}

// stagingDir is where candidates are tested: a dot directory, so the
// registry never indexes them and Git never commits them. IMPORTANT: it
// MUST be the tools directory's executor.StagingDir, the only place the
// executor runs modules from memory (TestStagingDirIsTheExecutors).
const stagingDir = "tools/.forge/"

// staged is where candidate path p is tested.
func staged(p string) string { return stagingDir + strings.TrimPrefix(p, "tools/") }

// runTests runs the candidate's tests, staged beside it (they load it with
// require('./<name>')), from memory: the executor gets both as the run's
// overlay and never reads or writes them on disk (creating and removing
// two files was the largest part of a forge's CPU outside the model). The
// tests' default export passes when it returns, fails with what it throws.
// The tests run on the executor actor, with caller's rights: model-written
// test code can do no more than the process that asked for the forge.
func (f *Forge) runTests(ctx context.Context, caller *execclient.Caller, op string, req json.RawMessage) (json.RawMessage, error) {
	var c candidate
	if err := json.Unmarshal(req, &c); err != nil || op != "run" {
		return nil, driver.Errorf(driver.CodeInvalid, "forge.%s: bad request", op)
	}
	tool, tests := staged(c.Path), staged(testPath(c.Path))
	res, _, err := f.opts.Executor.Run(ctx, execclient.RunRequest{Path: tests, Caller: caller,
		Overlay: map[string][]byte{tool: []byte(c.Code), tests: []byte(c.Tests)}})
	if ctx.Err() != nil {
		// Interrupted, not judged: an error, so the journal does not record
		// it and a resumed forge runs the tests again.
		return nil, ctx.Err()
	}
	if err != nil {
		// Not judged either (the executor actor did not answer, or refused
		// the caller's token): the forge fails with it.
		return nil, driver.Errorf(driver.CodeIO, "running the tests of %s: %v", c.Path, err)
	}
	out := testOutcome{Passed: res.Success, Logs: res.Logs}
	if !res.Success {
		out.Error = fmt.Sprintf("%s: %s", res.Error.Kind, res.Error.Message)
	}
	b, _ := driver.Marshal(out)
	return b, nil
}

// Clean removes what is left in the staging directory: files an older
// version, which staged candidates on disk, left when it crashed mid-test.
func (f *Forge) Clean() {
	files, _ := f.opts.Jail.List(strings.TrimSuffix(stagingDir, "/"))
	for _, p := range files {
		_ = f.opts.Jail.Remove(p)
	}
}
