package forge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/driver"
)

// testDriver is the forge's own device: running a candidate's tests is a
// journaled call like a model request, so a resumed forge gets the recorded
// outcome instead of running the tests again.
const testDriver = "forge"

type testOutcome struct {
	Passed bool     `json:"passed"`
	Error  string   `json:"error,omitempty"`
	Logs   []string `json:"logs,omitempty"`
}

// devices is the forge's driver set: the model and the test runner.
func (f *Forge) devices() driver.Host {
	return driver.Mux{
		"llm":      f.opts.LLM,
		testDriver: driver.DeviceFunc(f.runTests),
	}
}

// runTests writes the candidate where it will live (the tests require it
// by its relative path) and runs the tests' default export in the sandbox:
// it passes when it returns, fails with the error it throws.
//
// IMPORTANT: the candidate is in the working tree, unregistered and
// uncommitted, while its tests run; a failing last attempt restores what
// was there before.
func (f *Forge) runTests(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	var c candidate
	if err := json.Unmarshal(req, &c); err != nil || op != "run" {
		return nil, driver.Errorf(driver.CodeInvalid, "forge.%s: bad request", op)
	}
	prev, prevErr := f.opts.Jail.ReadFile(c.Path)
	if err := f.opts.Jail.WriteFile(c.Path, []byte(c.Code)); err != nil {
		return nil, driver.Errorf(driver.CodeIO, "writing the candidate %s: %v", c.Path, err)
	}
	res := f.opts.Executor.Exec(ctx, executor.Request{Path: testPath(c.Path), Source: []byte(c.Tests)})
	out := testOutcome{Passed: res.Success, Logs: res.Logs}
	if !res.Success {
		out.Error = fmt.Sprintf("%s: %s", res.Error.Kind, res.Error.Message)
		// Put back what was there: a failed candidate never stays.
		if prevErr == nil {
			_ = f.opts.Jail.WriteFile(c.Path, prev)
		} else {
			_ = f.opts.Jail.Remove(c.Path)
		}
	}
	b, _ := json.Marshal(out)
	return b, nil
}
