package approval

import (
	"fmt"
	"time"

	"github.com/agentos-run/agentos/config"
)

// Config is agentos.json's governance.approval, the approval gate
// (docs/GOVERNANCE.md): a run
// of a tool whose check_tool risk is in Levels waits until that version of
// the tool is approved ('agentos approve', Runtime.Approve, an MCP
// client's confirmation). The zero value is the gate on with the defaults.
type Config struct {
	// Off turns the gate off: every tool runs unasked. Default false.
	Off bool `json:"off,omitempty"`
	// Levels are the risk levels needing an approval: any of "low",
	// "medium", "high", "critical". Default ["high", "critical"].
	Levels []string `json:"levels,omitempty"`
	// Rights, when set, limit the gate to runs by callers holding at
	// least one of these rights (e.g. ["write", "fetch", "sql"]): a tool
	// runs with its caller's rights only. Default: every caller.
	Rights []string `json:"rights,omitempty"`
	// Paths, when set, limit the gate to these tools, relative to the
	// tool root: "tools/pay/" a directory, "tools/*.ts" a glob,
	// "tools/x.ts" one tool. Default: every tool.
	Paths []string `json:"paths,omitempty"`
	// Timeout bounds how long a run waits for its approval, then fails
	// with approval_timeout (the request stays pending). Default 5m.
	Timeout config.Duration `json:"timeout,omitzero"`
}

// Policy is the gate's policy of the configuration.
func (a Config) Policy() Policy {
	return Policy{Off: a.Off, Levels: a.Levels, Rights: a.Rights, Paths: a.Paths, Timeout: time.Duration(a.Timeout)}
}

// Validate checks the section, naming the key that is wrong.
func (a Config) Validate() error {
	if err := a.Policy().Validate("governance.approval"); err != nil {
		return err
	}
	for _, r := range a.Rights {
		switch r {
		case "read", "write", "exec", "spawn", "fetch", "sql", "llm", "mcp":
		default:
			return fmt.Errorf("governance.approval.rights: %q is not a right: use read, write, exec, spawn, fetch, sql, llm or mcp", r)
		}
	}
	return nil
}
