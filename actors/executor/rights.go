package executor

import (
	"context"
	"encoding/json"
	"fmt"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/vfs"
)

// The rights of a run's caller. A run made for a process (exec_tool, a
// forge's test run) executes with exactly that process's rights: every file
// operation and require of the tool is checked on its resolved path
// (Request.Rights, enforced by the sandbox and the module loader), and
// every driver call that needs a right is checked call by call (the
// middleware below): fetch on the URL the fetch driver sends, sql, llm.
// The executor actor builds both from the caller's capability token
// (tokenRights); recovery builds them from the grants journaled with the run
// (CallerRights).

// Refusal is a capability check that a run's caller failed: the actor
// reports it to ActorOptions.OnRefused (the node logs it as the kernel's
// "refused" event, counted by agentos.kernel.refusals).
type Refusal struct {
	// PID, Name and Holder are the caller's (Caller).
	PID    uint64
	Name   string
	Holder string
	// Right was missing on Resource (a root-relative path, a URL, "").
	Right    capability.Right
	Resource string
	// Err is the refusal, as the tool saw it.
	Err error
}

// tokenRights check a caller's token, held after the executor actor
// verified it (capability.Authority.Hold), on every call: revocation,
// expiry and use counts are checked every time, so a process that ends
// during its run is refused from then on.
type tokenRights struct {
	held      *capability.Held
	caller    execclient.Caller
	onRefused func(Refusal)
}

func (r tokenRights) check(right capability.Right, resource string) error {
	err := r.held.Check(r.caller.Holder, right, resource)
	if err != nil && r.onRefused != nil {
		r.onRefused(Refusal{PID: r.caller.PID, Name: r.caller.Name, Holder: r.caller.Holder, Right: right, Resource: resource, Err: err})
	}
	return err
}

// Allow implements vfs.Rights.
func (r tokenRights) Allow(a vfs.Access, path string) error {
	return r.check(capability.Right(a), path)
}

// Covers implements vfs.Rights.
func (r tokenRights) Covers(a vfs.Access, path string) bool {
	return r.held.Covers(capability.Right(a), path)
}

// CallerRights returns the rights of a journaled run's caller, for runs
// made again without their process (recovery after a crash): the sandbox's
// file rights and the driver checks (fetch, sql, llm) that exec_tool gave
// the original run, from the grants the caller held when it began.
func CallerRights(c journal.Caller) (vfs.Rights, driver.Middleware) {
	g := grantRights{c}
	return g, checkDrivers(g.check)
}

// grantRights checks rights against a recorded caller's grants.
type grantRights struct{ c journal.Caller }

func (g grantRights) check(right capability.Right, resource string) error {
	if capability.GrantsCover(g.c.Grants, right, resource) {
		return nil
	}
	return fmt.Errorf("%w: %s (whose run this is) held no %q right on %q", capability.ErrDenied, g.c.Process, right, resource)
}

// Allow implements vfs.Rights.
func (g grantRights) Allow(a vfs.Access, path string) error {
	return g.check(capability.Right(a), path)
}

// Covers implements vfs.Rights.
func (g grantRights) Covers(a vfs.Access, path string) bool {
	return capability.GrantsCover(g.c.Grants, capability.Right(a), path)
}

// checkDrivers is the driver half of a caller's rights: check decides,
// call by call, whether the caller holds the right a driver needs: fetch
// (on the URL), sql, llm, mcp (on "server/tool"). A refusal is the call's error, which the tool
// sees, and is journaled like any answer.
func checkDrivers(check func(capability.Right, string) error) driver.Middleware {
	return func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			var right capability.Right
			resource := ""
			switch c.Driver {
			case driver.FetchDriver:
				right = capability.Fetch
				var r struct {
					URL string `json:"url"`
				}
				_ = json.Unmarshal(c.Request, &r)
				// The scope is checked on the URL the fetch driver sends
				// (dot segments resolved), never on what the tool wrote:
				// /v1/../admin is /admin. A URL the driver would refuse is
				// refused here, with the driver's reason.
				u, err := driver.CanonicalURL(r.URL)
				if err != nil {
					return nil, err
				}
				resource = u.String()
			case "sql":
				right = capability.SQL
			case "llm":
				right = capability.LLM
			case mcpdriver.Name:
				// Scoped "server/tool": a grant on "github/" covers every
				// tool of the server github.
				right = capability.MCP
				resource = mcpScope(c.Op, c.Request)
			default:
				return next.Do(ctx, c)
			}
			if err := check(right, resource); err != nil {
				return nil, driver.Errorf(driver.CodeSecurity, "%s.%s refused: %v", c.Driver, c.Op, err)
			}
			return next.Do(ctx, c)
		})
	}
}

// mcpScope is the scope an mcp driver request needs the mcp right on:
// "server/tool" for a call, "server/resource:<uri>" for a resource read,
// "server/prompt:<name>" for a prompt (a tool's name has no ':', so none
// of them is a tool's scope; a grant on "server/" covers all three).
func mcpScope(op string, req json.RawMessage) string {
	var r struct {
		Server string `json:"server"`
		Tool   string `json:"tool"`
		URI    string `json:"uri"`
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal(req, &r)
	switch op {
	case mcpdriver.OpReadResource:
		return r.Server + "/resource:" + r.URI
	case mcpdriver.OpGetPrompt:
		return r.Server + "/prompt:" + r.Prompt
	}
	return r.Server + "/" + r.Tool
}

// chargeDrivers charges the caller, call by call, for the driver calls that
// cost quota: an mcp call is a tool call of another server's tool, so it
// costs one capability.ToolCalls like a kernel tool call (a run's fetch
// and sql calls are paid by its exec_tool). It sits below checkDrivers: a
// call refused for a right costs nothing more; a call the quota refuses is
// not made, and the tool sees a "quota" error it can catch (journaled like
// any answer, so a replay charges nothing).
func chargeDrivers(charge func(context.Context, capability.Meter, float64) error) driver.Middleware {
	return func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			if c.Driver == mcpdriver.Name {
				if err := charge(ctx, capability.ToolCalls, 1); err != nil {
					return nil, driver.Errorf(driver.CodeQuota, "%s.%s refused: %v", c.Driver, c.Op, err)
				}
			}
			return next.Do(ctx, c)
		})
	}
}

// mountsFor returns the mounts a run for the caller holding rights sees:
// a driver.GuardedMount (e.g. /mcp) as that caller sees it (For), so that
// its fs device and its requires show and read only what the caller may
// use, as the kernel's list_files and read_file do. nil rights (the
// operator's own runs) see every mount whole.
func mountsFor(mounts map[string]driver.Mount, rights vfs.Rights) map[string]driver.Mount {
	if rights == nil || len(mounts) == 0 {
		return mounts
	}
	out := make(map[string]driver.Mount, len(mounts))
	cr := callerRightsOf(rights)
	for point, m := range mounts {
		if g, ok := m.(driver.GuardedMount); ok {
			m = g.For(cr)
		}
		out[point] = m
	}
	return out
}

// callerRights are a run caller's rights as a driver.GuardedMount asks
// about them.
type callerRights struct {
	check  func(capability.Right, string) error
	covers func(capability.Right, string) bool
	// grants returns the caller's grants (nil: unknown; Reaches then asks
	// covers about everything under the resource).
	grants func() []capability.Grant
}

// callerRightsOf returns the driver.CallerRights of a run's vfs.Rights:
// the caller's token (tokenRights, checked live) or its journaled grants
// (grantRights, recovery).
func callerRightsOf(r vfs.Rights) driver.CallerRights {
	switch r := r.(type) {
	case tokenRights:
		return callerRights{check: r.check, covers: r.held.Covers, grants: func() []capability.Grant { return r.held.Token().Grants }}
	case grantRights:
		return callerRights{check: r.check, covers: func(right capability.Right, res string) bool { return capability.GrantsCover(r.c.Grants, right, res) },
			grants: func() []capability.Grant { return r.c.Grants }}
	}
	return callerRights{
		check:  func(right capability.Right, res string) error { return r.Allow(vfs.Access(right), res) },
		covers: func(right capability.Right, res string) bool { return r.Covers(vfs.Access(right), res) },
	}
}

// Allow implements driver.CallerRights.
func (c callerRights) Allow(right, resource string) error {
	return c.check(capability.Right(right), resource)
}

// Covers implements driver.CallerRights.
func (c callerRights) Covers(right, resource string) bool {
	return c.covers(capability.Right(right), resource)
}

// Reaches implements driver.CallerRights: a grant of right on every
// resource, on resource, or on something under it.
func (c callerRights) Reaches(right, resource string) bool {
	if c.grants == nil {
		return c.covers(capability.Right(right), resource+"/")
	}
	for _, g := range c.grants() {
		// covers on the grant's own scope is false for a token revoked,
		// expired or used up: such a caller reaches nothing.
		if g.Reaches(capability.Right(right), resource) && c.covers(g.Right, g.Scope) {
			return true
		}
	}
	return false
}
