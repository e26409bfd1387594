package approval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// Error codes of a run the gate stopped: stable, greppable strings, the
// Kind of the run's error (execclient.Result.Error.Kind).
const (
	CodeTimeout = "approval_timeout"
	CodeDenied  = "approval_denied"
	// CodeRequired: a gated run loaded a module its gate had not judged
	// with the tool (a require the syntax tree cannot resolve), at a gated
	// risk level and not approved on its own: the require was refused and
	// the module's own request recorded (node's admitModule).
	CodeRequired = "approval_required"
)

// DefaultTimeout is how long a run waits for its approval when the policy
// names no timeout.
const DefaultTimeout = 5 * time.Minute

// DefaultLevels are the risk levels that need an approval when the policy
// names none.
var DefaultLevels = []string{"high", "critical"}

// Error is a run the gate stopped: Code is CodeTimeout or CodeDenied.
// errors.Is(err, ErrTimeout) and errors.Is(err, ErrDenied) match by code.
type Error struct {
	Code    string
	Request Request
	Msg     string
}

func (e *Error) Error() string { return e.Msg }

// Is matches the sentinels by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrTimeout = &Error{Code: CodeTimeout}
	ErrDenied  = &Error{Code: CodeDenied}
)

// Policy says which runs need an approval. The zero value: runs of tools
// rated high or critical, by any caller, wait up to DefaultTimeout.
type Policy struct {
	// Off turns the gate off: nothing waits.
	Off bool
	// Levels are the check_tool risk levels that need an approval (empty:
	// DefaultLevels).
	Levels []string
	// Rights, when set, limit the gate to callers holding at least one of
	// these capability rights ("write", "fetch", "sql" ...): a tool runs
	// with its caller's rights, so a caller without them cannot be made to
	// do the damage the risk is about.
	Rights []string
	// Paths, when set, limit the gate to these tools: a path ending in "/"
	// is a directory prefix, one with *, ? or [ a glob (path.Match), else
	// one tool; all relative to the tool root ("tools/payments/").
	Paths []string
	// Timeout bounds a run's wait (0: DefaultTimeout).
	Timeout time.Duration
}

// Needs reports whether a run of the tool at p, rated risk, by a caller
// for which holds reports each right held, needs an approval.
func (pol Policy) Needs(p, risk string, holds func(right string) bool) bool {
	if pol.Off {
		return false
	}
	levels := pol.Levels
	if len(levels) == 0 {
		levels = DefaultLevels
	}
	if !slices.Contains(levels, risk) {
		return false
	}
	if len(pol.Paths) > 0 && !slices.ContainsFunc(pol.Paths, func(pat string) bool { return matchPath(pat, p) }) {
		return false
	}
	if len(pol.Rights) > 0 && holds != nil && !slices.ContainsFunc(pol.Rights, holds) {
		return false
	}
	return true
}

// Applies reports whether the gate holds runs of the tool at p, by a
// caller for which holds reports each right held, at some risk level: the
// runs whose modules are judged as they load (a module of a gated level
// they load unjudged is refused).
func (pol Policy) Applies(p string, holds func(right string) bool) bool {
	levels := pol.Levels
	if len(levels) == 0 {
		levels = DefaultLevels
	}
	return slices.ContainsFunc(levels, func(l string) bool { return pol.Needs(p, l, holds) })
}

func matchPath(pat, p string) bool {
	switch {
	case strings.HasSuffix(pat, "/"):
		return strings.HasPrefix(p, pat)
	case strings.ContainsAny(pat, "*?["):
		ok, _ := path.Match(pat, p)
		return ok
	}
	return pat == p
}

// Validate checks the policy's values; name prefixes its errors.
func (pol Policy) Validate(name string) error {
	for _, l := range pol.Levels {
		switch l {
		case "low", "medium", "high", "critical":
		default:
			return fmt.Errorf("%s.levels: %q is not a risk level: use low, medium, high or critical", name, l)
		}
	}
	for _, p := range pol.Paths {
		if p == "" || strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") {
			return fmt.Errorf("%s.paths: %q must be a tool path or directory relative to the tool root, e.g. \"tools/payments/\"", name, p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%s.paths: %q is not a valid pattern: %v", name, p, err)
		}
	}
	if pol.Timeout < 0 {
		return fmt.Errorf("%s.timeout must be positive", name)
	}
	return nil
}

// Gate holds runs until their version is approved: the Store plus the runs
// waiting in this process. It is safe for concurrent use.
type Gate struct {
	store  *Store
	policy Policy
	log    *slog.Logger

	mu      sync.Mutex
	waiters map[string]*waiter // request id -> the runs waiting on it
}

type waiter struct {
	n    int
	done chan struct{}
}

// NewGate returns the gate over store with policy (log nil: slog.Default).
// The gate does not close the store.
func NewGate(store *Store, policy Policy, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	return &Gate{store: store, policy: policy, log: log, waiters: map[string]*waiter{}}
}

// Policy returns the gate's policy.
func (g *Gate) Policy() Policy { return g.policy }

// Store returns the gate's file.
func (g *Gate) Store() *Store { return g.store }

// Timeout is how long a run waits.
func (g *Gate) Timeout() time.Duration {
	if g.policy.Timeout > 0 {
		return g.policy.Timeout
	}
	return DefaultTimeout
}

// Approved reports whether the version (p, hash) is approved now.
func (g *Gate) Approved(p, hash string) bool {
	r, ok, err := g.store.Lookup(p, hash)
	return err == nil && ok && r.State == StateApproved
}

// Request makes (or finds) the pending request of a's version without
// waiting: a tool written that will need an approval is listed at once.
func (g *Gate) Request(a Ask) (Request, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, created, err := g.store.Ask(a)
	if err == nil && created {
		g.log.Info("approval: requested", "id", r.ID, "path", r.Path, "hash", short(r.Hash), "risk", r.Risk, "by", a.By)
	}
	return r, err
}

// Await returns nil once a's version is approved: at once when it was,
// else after making (or finding) its pending request and waiting, at most
// wait (0: the policy's timeout), for a decision. A denial is an *Error
// with CodeDenied and the reason; no decision in time an *Error with
// CodeTimeout (the request stays pending); ctx ending returns an error
// wrapping ctx.Err().
func (g *Gate) Await(ctx context.Context, a Ask, wait time.Duration) error {
	if wait <= 0 {
		wait = g.Timeout()
	}
	r, w, err := g.join(a)
	if w == nil {
		return err
	}
	defer g.leave(r.ID, w)
	return g.wait(ctx, r, w, wait)
}

// join finds a's request, asking for it when its version never was, and
// adds a waiter on it while it is pending. w is nil when there is nothing
// to wait for: err is then the decision's outcome (nil: approved) or why
// the request could not be recorded.
func (g *Gate) join(a Ask) (r Request, w *waiter, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// The version's request is read first: an approved (or pending)
	// version costs no write transaction and no fsync; only a version
	// never asked for is written.
	r, found, err := g.store.Lookup(a.Path, a.Hash)
	created := false
	if err == nil && !found {
		r, created, err = g.store.Ask(a)
	}
	if err != nil {
		return r, nil, fmt.Errorf("approval: recording the request to run %s: %w", a.Path, err)
	}
	if r.State != StatePending {
		return r, nil, g.outcome(r)
	}
	if created {
		g.log.Info("approval: requested", "id", r.ID, "path", r.Path, "hash", short(r.Hash), "risk", r.Risk, "by", a.By)
	}
	w = g.waiters[r.ID]
	if w == nil {
		w = &waiter{done: make(chan struct{})}
		g.waiters[r.ID] = w
	}
	w.n++
	return r, w, nil
}

// leave removes a waiter added by join on the request id, and the
// request's waiter once nobody waits on it.
func (g *Gate) leave(id string, w *waiter) {
	g.mu.Lock()
	if w.n--; w.n == 0 && g.waiters[id] == w {
		delete(g.waiters, id)
	}
	g.mu.Unlock()
}

// wait waits on w, at most wait, for the pending request r to be decided,
// and returns the decision's outcome (see Await).
func (g *Gate) wait(ctx context.Context, r Request, w *waiter, wait time.Duration) error {
	t := time.NewTimer(wait)
	defer t.Stop()
	// A decision of this process wakes the run at once; one written by
	// another process (the CLI with no node to ask) is seen by polling.
	poll := time.NewTicker(PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-w.done:
		case <-poll.C:
			d, _, err := g.store.Get(r.ID)
			if err != nil || d.State == StatePending {
				continue // a busy file is asked again at the next tick
			}
		case <-t.C:
			return &Error{Code: CodeTimeout, Request: r, Msg: fmt.Sprintf(
				"%s (risk %s%s) was not run: it needs an approval and none came within %v; approve it with 'agentos approve %s' (or 'agentos approve %s'; from Go, Runtime.Approve), then run it again — the request stays pending ('agentos approvals' lists it)",
				r.Path, r.Risk, reasons(r), wait, r.ID, r.Path)}
		case <-ctx.Done():
			return fmt.Errorf("approval: the wait of %s for its approval (request %s) ended before a decision: %w; the request stays pending: approve it ('agentos approve %s') and run the tool again", r.Path, r.ID, ctx.Err(), r.ID)
		}
		d, _, err := g.store.Get(r.ID)
		if err != nil {
			return err
		}
		return g.outcome(d)
	}
}

// PollInterval is how often a waiting run looks for a decision another
// process wrote in the approvals file.
var PollInterval = 500 * time.Millisecond

func (g *Gate) outcome(r Request) error {
	if r.State == StateApproved {
		return nil
	}
	reason := r.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return &Error{Code: CodeDenied, Request: r, Msg: fmt.Sprintf(
		"%s (version %s, risk %s) was denied by %s: %s; change the tool (a new version asks again), or approve this version with 'agentos approve %s'",
		r.Path, short(r.Hash), r.Risk, orUnknown(r.DecidedBy), reason, r.ID)}
}

// Decide approves or denies the request id and wakes the runs waiting on
// it.
func (g *Gate) Decide(id string, approve bool, by, reason string) (Request, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.store.Decide(id, approve, by, reason)
	if err != nil {
		return r, err
	}
	return g.decided(r), nil
}

// DecideVersion approves or denies a's version (asked for or not) and
// wakes the runs waiting on it.
func (g *Gate) DecideVersion(a Ask, approve bool, by, reason string) (Request, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.store.DecideVersion(a, approve, by, reason)
	if err != nil {
		return r, err
	}
	return g.decided(r), nil
}

// decided logs r's decision and wakes its waiters; g.mu is held.
func (g *Gate) decided(r Request) Request {
	if w := g.waiters[r.ID]; w != nil {
		r.Waiting = w.n
		close(w.done)
		delete(g.waiters, r.ID)
	}
	g.log.Info("approval: "+string(r.State), "id", r.ID, "path", r.Path, "hash", short(r.Hash), "by", r.DecidedBy, "reason", r.Reason, "waiting", r.Waiting)
	return r
}

// List returns the requests in state (all when empty), oldest first, with
// how many runs wait on each in this process.
func (g *Gate) List(state State) ([]Request, error) {
	rs, err := g.store.List(state)
	g.mu.Lock()
	for i := range rs {
		if w := g.waiters[rs[i].ID]; w != nil {
			rs[i].Waiting = w.n
		}
	}
	g.mu.Unlock()
	return rs, err
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func orUnknown(s string) string {
	if s == "" {
		return "someone unknown"
	}
	return s
}

func reasons(r Request) string {
	if len(r.Reasons) == 0 {
		return ""
	}
	return ": " + strings.Join(r.Reasons, "; ")
}

// IsGateError reports whether err is a run the gate stopped, and its code.
func IsGateError(err error) (string, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return "", false
}
