package executor

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/vfs"
)

// CallerRights returns the rights of a journaled run's caller, for runs
// made again without their process (recovery after a crash): the sandbox's
// file rights and the driver checks (fetch, sql, llm) that exec_tool gave
// the original run, from the grants the caller held when it began.
func CallerRights(c journal.Caller) (vfs.Rights, driver.Middleware) {
	g := grantRights{c}
	return g, CheckDrivers(g.check)
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

// CheckDrivers is the driver half of a caller's rights: check decides, call
// by call, whether the caller holds the right a driver needs (fetch, on the
// URL the driver sends; sql; llm). A refusal is the call's error, with
// driver.CodeSecurity; other drivers pass (the sandbox checks files).
func CheckDrivers(check func(capability.Right, string) error) driver.Middleware {
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
