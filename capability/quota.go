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
}

// Reason is the exit reason of a process that exceeded the quota:
// "quota:<meter>".
func (e *QuotaError) Reason() string { return "quota:" + string(e.Meter) }

func (e *QuotaError) Error() string {
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

// Charge spends amount of m on a and every ancestor, or on none of them: it
// fails with a *QuotaError naming the first account that lacks room.
func (a *Account) Charge(m Meter, amount float64) error {
	if amount < 0 {
		return fmt.Errorf("capability: charge of %g %s: a charge must not be negative (use Refund)", amount, m)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for x := a; x != nil; x = x.parent {
		if limit, ok := x.limits[m]; ok && x.used[m]+amount > limit {
			return &QuotaError{Account: x.name, Meter: m, Limit: limit, Used: x.used[m], Want: amount}
		}
	}
	for x := a; x != nil; x = x.parent {
		if x.used == nil {
			x.used = map[Meter]float64{}
		}
		x.used[m] += amount
	}
	return nil
}

// Refund gives back amount of m on a and every ancestor. It never fails; use
// never goes below zero.
func (a *Account) Refund(m Meter, amount float64) {
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
