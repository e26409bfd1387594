package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
)

// QuotaUse returns what the accounts of the tool root at root have spent
// of the cumulative meters (tool_calls, llm_tokens, cost_usd), as kept in
// QuotaFile across runtimes: "node" for the node's quota, "process:agent"
// for the default process's. It fails with capability.ErrLedgerBusy while
// a runtime (a serving node) holds the root.
func QuotaUse(root string) ([]capability.Spending, error) {
	path := filepath.Join(root, QuotaFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	l, err := capability.OpenLedger(path)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.All()
}

// ResetQuota forgets what the given accounts of the tool root at root have
// spent (none given: every account), so that their quotas start afresh at
// the next start. An account is named as QuotaUse shows it, or by a process
// name alone ("agent" for "process:agent"). It returns the accounts
// cleared, and fails with capability.ErrLedgerBusy while a runtime holds
// the root: stop the node first.
func ResetQuota(root string, accounts ...string) ([]string, error) {
	path := filepath.Join(root, QuotaFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if len(accounts) > 0 {
			return nil, errors.New("agentos: no quota use is recorded in this tool root yet")
		}
		return nil, nil
	}
	keys := make([]string, len(accounts))
	for i, a := range accounts {
		keys[i] = a
		if a != kernel.LedgerKey("") && !strings.Contains(a, ":") {
			keys[i] = kernel.LedgerKey(a)
		}
	}
	l, err := capability.OpenLedger(path)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Reset(keys...)
}
