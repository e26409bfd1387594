package capability

import (
	"fmt"
	"sync"
)

// Meter is one kind of spending an account limits.
type Meter string

// The meters.
const (
	LLMTokens Meter = "llm_tokens"
	ToolCalls Meter = "tool_calls"
	CostUSD   Meter = "cost_usd"
	Children  Meter = "children" // concurrent child accounts; freed when a child closes
	WallMS    Meter = "wall_ms"
	MemoryMB  Meter = "memory_mb"
)

// Cumulative are the meters that only grow, spending rather than holding:
// a Ledger keeps them across restarts. The others are held and given back
// (children, memory_mb) or measure one lifetime (wall_ms).
var Cumulative = []Meter{LLMTokens, ToolCalls, CostUSD}

// IsCumulative reports whether m is one of Cumulative.
func IsCumulative(m Meter) bool {
	for _, c := range Cumulative {
		if c == m {
			return true
		}
	}
	return false
}

// HasCumulative reports whether l limits a cumulative meter: an account
// with such a limit is worth persisting (Account.Persist).
func HasCumulative(l Limits) bool {
	for m := range l {
		if IsCumulative(m) {
			return true
		}
	}
	return false
}

// Ledger keeps what accounts spent of the cumulative meters, so that a
// limit holds across restarts of the program (a CLI invocation, a node
// restart) instead of starting afresh each time. Keys name accounts
// stably (a process name, not a PID).
type Ledger interface {
	// Spent returns what the account key has spent, by meter.
	Spent(key string) (map[Meter]float64, error)
	// Add records that every account of keys spent amount more of m (a
	// negative amount gives back). IMPORTANT: it MUST be durable when it
	// returns nil, and all-or-nothing.
	Add(keys []string, m Meter, amount float64) error
}

// Limits maps a meter to its limit; a meter absent from the map is
// unlimited.
type Limits map[Meter]float64

// QuotaError says which account and meter refused a charge.
type QuotaError struct {
	Account string
	Meter   Meter
	Limit   float64
	Used    float64
	Want    float64
	// Key is the account's ledger key when its use is kept across
	// restarts (see Account.Persist), else "".
	Key string
}

// Reason is the exit reason of a process that exceeded the quota:
// "quota:<meter>".
func (e *QuotaError) Reason() string { return "quota:" + string(e.Meter) }

func (e *QuotaError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("%s: account %s (%s) has used %g of its %g %s, counted across restarts; %g more was refused", e.Reason(), e.Account, e.Key, e.Used, e.Limit, e.Meter, e.Want)
	}
	return fmt.Sprintf("%s: account %s has used %g of its %g %s; %g more was refused", e.Reason(), e.Account, e.Used, e.Limit, e.Meter, e.Want)
}

// Account is a node of a quota tree. It is safe for concurrent use; all
// accounts of a tree share one lock, so a charge up the chain is atomic.
type Account struct {
	name   string
	parent *Account
	mu     *sync.Mutex
	limits Limits
	used   map[Meter]float64
	closed bool
	ledger Ledger // nil: spending is kept in memory only
	key    string // the account's key in ledger
}

// NewAccount returns the root of a new tree.
func NewAccount(name string, limits Limits) *Account {
	return &Account{name: name, mu: &sync.Mutex{}, limits: clone(limits), used: map[Meter]float64{}}
}

func clone(l Limits) Limits {
	if len(l) == 0 {
		return nil
	}
	c := Limits{}
	for k, v := range l {
		c[k] = v
	}
	return c
}

// Name returns the account's name.
func (a *Account) Name() string { return a.name }

// Child opens a child account with its own limits; it takes one Children
// slot of a and of every ancestor (all-or-nothing), given back by Close.
func (a *Account) Child(name string, limits Limits) (*Account, error) {
	if err := a.Charge(Children, 1); err != nil {
		return nil, err
	}
	return &Account{name: name, parent: a, mu: a.mu, limits: clone(limits)}, nil
}

// Close frees the child's Children slot in its ancestors. It is safe to call
// twice.
func (a *Account) Close() {
	a.mu.Lock()
	if a.closed || a.parent == nil {
		a.closed = true
		a.mu.Unlock()
		return
	}
	a.closed = true
	a.mu.Unlock()
	a.parent.Refund(Children, 1)
}

// Persist makes a's spending of the cumulative meters outlive the program:
// what ledger recorded under key becomes a's use now, and from then on
// every charge of a cumulative meter on a, or on a descendant, is recorded
// in ledger under key before Charge returns (a charge the ledger cannot
// record is refused). Call it before a is charged. Accounts without a
// limit on a cumulative meter need no persisting: their spending reaches
// their persisted ancestors' keys anyway.
func (a *Account) Persist(ledger Ledger, key string) error {
	spent, err := ledger.Spent(key)
	if err != nil {
		return fmt.Errorf("capability: reading what account %s spent before: %w", key, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used == nil {
		a.used = map[Meter]float64{}
	}
	for m, v := range spent {
		if IsCumulative(m) {
			a.used[m] += v
		}
	}
	a.ledger, a.key = ledger, key
	return nil
}

// Charge spends amount of m on a and every ancestor, or on none of them: it
// fails with a *QuotaError naming the first account that lacks room. A
// cumulative meter is recorded in the ledger of every persisted account of
// the chain (see Persist) before Charge returns.
func (a *Account) Charge(m Meter, amount float64) error {
	if amount < 0 {
		return fmt.Errorf("capability: charge of %g %s: a charge must not be negative (use Refund)", amount, m)
	}
	a.mu.Lock()
	for x := a; x != nil; x = x.parent {
		if limit, ok := x.limits[m]; ok && x.used[m]+amount > limit {
			qe := &QuotaError{Account: x.name, Meter: m, Limit: limit, Used: x.used[m], Want: amount}
			if x.ledger != nil && IsCumulative(m) {
				qe.Key = x.key
			}
			a.mu.Unlock()
			return qe
		}
	}
	for x := a; x != nil; x = x.parent {
		if x.used == nil {
			x.used = map[Meter]float64{}
		}
		x.used[m] += amount
	}
	ledgers := a.ledgersLocked(m)
	a.mu.Unlock()
	// Recorded outside the tree's lock: concurrent charges queue in the
	// ledger, not here. The charge is already held in memory, so none can
	// overspend meanwhile; one the ledger refuses is given back.
	for i, l := range ledgers {
		if err := l.ledger.Add(l.keys, m, amount); err != nil {
			for _, done := range ledgers[:i] {
				_ = done.ledger.Add(done.keys, m, -amount)
			}
			a.refund(m, amount)
			return fmt.Errorf("capability: the charge of %g %s could not be recorded, so it is refused: %w", amount, m, err)
		}
	}
	return nil
}

// ledgerKeys are the keys of one ledger in an account chain.
type ledgerKeys struct {
	ledger Ledger
	keys   []string
}

// ledgersLocked returns, for a cumulative meter, the persisted accounts of
// a's chain grouped by ledger (nearly always one). a.mu is held.
func (a *Account) ledgersLocked(m Meter) []ledgerKeys {
	if !IsCumulative(m) {
		return nil
	}
	var out []ledgerKeys
	for x := a; x != nil; x = x.parent {
		if x.ledger == nil {
			continue
		}
		found := false
		for i := range out {
			if out[i].ledger == x.ledger {
				out[i].keys = append(out[i].keys, x.key)
				found = true
			}
		}
		if !found {
			out = append(out, ledgerKeys{ledger: x.ledger, keys: []string{x.key}})
		}
	}
	return out
}

// Refund gives back amount of m on a and every ancestor (and in their
// ledgers, for a cumulative meter). It never fails; use never goes below
// zero.
func (a *Account) Refund(m Meter, amount float64) {
	a.mu.Lock()
	ledgers := a.ledgersLocked(m)
	a.mu.Unlock()
	for _, l := range ledgers {
		_ = l.ledger.Add(l.keys, m, -amount) // best effort: a refund never fails
	}
	a.refund(m, amount)
}

// refund gives back amount of m in memory.
func (a *Account) refund(m Meter, amount float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for x := a; x != nil; x = x.parent {
		if x.used != nil {
			x.used[m] = max(0, x.used[m]-amount)
		}
	}
}

// Used returns how much of m the account (with its descendants) has spent.
func (a *Account) Used(m Meter) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used[m]
}

// Left returns how much of m the account may still spend, the tightest of
// its own and its ancestors' room; ok is false when no limit applies.
func (a *Account) Left(m Meter) (left float64, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for x := a; x != nil; x = x.parent {
		if limit, has := x.limits[m]; has {
			room := limit - x.used[m]
			if !ok || room < left {
				left, ok = room, true
			}
		}
	}
	return left, ok
}

// Limits returns a copy of the account's own limits (nil: none).
func (a *Account) Limits() Limits {
	a.mu.Lock()
	defer a.mu.Unlock()
	return clone(a.limits)
}

// Carry makes a's own use of each meter in used at least that much,
// without charging its ancestors (they were charged when it was spent) or
// the ledger: a process restored from a snapshot (kernel.Kernel.Restore)
// starts with the budget its snapshot had left. A meter a already used
// more of (a ledger recorded it) keeps its higher use. Call it before a is
// charged.
func (a *Account) Carry(used Limits) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used == nil {
		a.used = map[Meter]float64{}
	}
	for m, v := range used {
		if v > a.used[m] {
			a.used[m] = v
		}
	}
}
