package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/capability"
)

// PID identifies a process of one kernel. PIDs are never reused while the
// kernel lives. It is the process-handle leaf's type (actors/kernel/proc).
type PID = proc.PID

// ReasonKind classifies why a process ended; the values are stable strings
// (the process-handle leaf's type).
type ReasonKind = proc.ReasonKind

// The exit reasons.
const (
	Normal   = proc.Normal   // Main returned nil
	Fault    = proc.Fault    // Main returned an error or panicked
	Killed   = proc.Killed   // Kill, or a linked process died abnormally
	Quota    = proc.Quota    // a charge exceeded the process's quota
	Deadline = proc.Deadline // SpawnOptions.Deadline passed
	Shutdown = proc.Shutdown // the kernel closed
	NoProc   = proc.NoProc   // Monitor of a process that was not alive
)

// Reason is why a process ended (the process-handle leaf's type; its
// String renders it as ps and events show it).
type Reason = proc.Reason

// ExitError ends a process with a chosen reason when Main returns it.
type ExitError struct{ Reason Reason }

func (e *ExitError) Error() string { return "exit: " + e.Reason.String() }

// Exit returns an error that, returned by Main, ends the process with r.
func Exit(r Reason) error { return &ExitError{Reason: r} }

// reasonOf maps what Main returned to an exit reason.
func reasonOf(err error) Reason {
	if err == nil {
		return Reason{Kind: Normal}
	}
	var ee *ExitError
	var qe *capability.QuotaError
	switch {
	case errors.As(err, &ee):
		return ee.Reason
	case errors.As(err, &qe):
		return Reason{Kind: Quota, Detail: string(qe.Meter)}
	default:
		return Reason{Kind: Fault, Detail: err.Error()}
	}
}

// Message is what Recv returns (the process-handle leaf's type).
type Message = proc.Message

// Down tells a monitor (or a process trapping exits, about a linked process)
// that a process ended, and why.
type Down struct {
	PID    PID
	Name   string
	Reason Reason
	// Link says the notice comes from a link, not a monitor.
	Link bool
}

// Term is a catchable request to terminate: a process receives it in its
// mailbox and decides how to end (clean up, then return). Compare Kill.
// (The process-handle leaf's type.)
type Term = proc.Term

// Main is a process's body. It runs on its own goroutine; ctx is cancelled
// when the process is killed, exceeds its quota or deadline, or the kernel
// closes, and Main MUST return promptly then. Returning nil ends the process
// normally; an error ends it with a fault (Exit(reason) and
// *capability.QuotaError choose other reasons); a panic is a fault too and
// never takes the program down.
type Main func(ctx context.Context, p *Process) error

// Status is a process's state as ps shows it (the kernel client's type).
type Status = kernelclient.Status

// The statuses.
const (
	Running = kernelclient.Running // executing, or in a kernel call
	Waiting = kernelclient.Waiting // blocked in Recv
	Stopped = kernelclient.Stopped // paused by Stop until Continue
	Dead    = kernelclient.Dead
)

// Process is a running agent process: a goroutine with a mailbox, a
// capability token and a quota account. Its methods are safe for concurrent
// use; a handle of a dead process refuses every call with ErrExited.
type Process struct {
	k       *Kernel
	pid     PID
	parent  PID
	image   string
	holder  string
	started time.Time
	// wallDeadline is when the wall_ms quota ends the process (zero: none).
	wallDeadline time.Time
	ctx          context.Context
	cancel       context.CancelCauseFunc
	acct         *capability.Account
	calls        atomic.Uint64
	gated        atomic.Int32 // goroutines blocked in Gate (tests wait for it)
	restored     bool         // started by Restore

	mu         sync.Mutex
	name       string
	token      *capability.Held // nil: no rights
	box        []Message
	head       int
	wake       chan struct{}                 // cap 1: a message arrived or the process was continued
	runs       map[uint64]context.CancelFunc // the tool runs p started, by HoldRun
	nextRun    uint64
	waiting    bool // blocked in Recv
	stopped    bool
	cont       chan struct{} // while stopped: closed by Continue, waking every waiter
	dead       bool
	reason     Reason
	trapExits  bool
	state      json.RawMessage // exposed to snapshots (SetState)
	links      pidSet
	monitors   pidSet // processes monitoring this one
	monitoring pidSet // processes this one monitors (a Down is delivered only while listed)
}

// PID returns the process id.
func (p *Process) PID() PID { return p.pid }

// Parent returns the spawning process (0: spawned by the kernel).
func (p *Process) Parent() PID { return p.parent }

// Holder is the process's name in capability tokens ("pid:<n>").
func (p *Process) Holder() string { return p.holder }

// Context is cancelled when the process ends; its cause is an *ExitError
// with the reason.
func (p *Process) Context() context.Context { return p.ctx }

// Account is the process's quota account.
func (p *Process) Account() *capability.Account { return p.acct }

// Token returns the process's capability token (ok false: it holds none).
func (p *Process) Token() (capability.Token, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token == nil {
		return capability.Token{}, false
	}
	return p.token.Token(), true
}

// EncodedToken returns the process's capability token encoded
// (capability.Token.Encode, encoded once); ok false: it holds none.
func (p *Process) EncodedToken() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token == nil {
		return "", false
	}
	return p.token.Encoded(), true
}

// Name returns the registered name ("" when none).
func (p *Process) Name() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.name
}

// Kernel returns the kernel the process runs on.
func (p *Process) Kernel() *Kernel { return p.k }

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.ctx.Done() }

// Reason returns why the process ended (ok false: it is alive).
func (p *Process) Reason() (Reason, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason, p.dead
}

// Wait blocks until the process ends and returns why, or ctx's error.
func (p *Process) Wait(ctx context.Context) (Reason, error) {
	select {
	case <-p.ctx.Done():
		r, _ := p.Reason()
		return r, nil
	case <-ctx.Done():
		return Reason{}, ctx.Err()
	}
}

// TrapExits makes links deliver a *Down message instead of killing this
// process when the linked process dies abnormally (Erlang's trap_exit).
func (p *Process) TrapExits(on bool) {
	p.mu.Lock()
	p.trapExits = on
	p.mu.Unlock()
}

// Send puts body in to's mailbox. Sending never blocks; it fails with
// ErrNoProcess when to is not alive (the message is not delivered).
func (p *Process) Send(to PID, body any) error {
	if err := p.alive(); err != nil {
		return err
	}
	t := p.k.lookupPID(to)
	if t == nil || !t.deliver(Message{From: p.pid, Body: body}) {
		return fmt.Errorf("%w: %v (send from %v)", ErrNoProcess, to, p.pid)
	}
	return nil
}

// deliver appends m to the mailbox; false when the process is dead.
func (p *Process) deliver(m Message) bool { return p.deliverIf(nil, m) }

// Recv returns the next message, waiting for one. It fails when ctx ends or
// the process ends (ErrExited). A stopped process receives nothing until it
// is continued. IMPORTANT: call Recv from one goroutine at a time (the
// process's own): two concurrent receivers may leave one waiting for a
// message the other took.
func (p *Process) Recv(ctx context.Context) (Message, error) {
	for {
		p.mu.Lock()
		if p.dead {
			p.mu.Unlock()
			return Message{}, p.exitedErr()
		}
		if p.stopped {
			cont := p.cont
			p.mu.Unlock()
			select {
			case <-cont:
			case <-ctx.Done():
				return Message{}, ctx.Err()
			case <-p.ctx.Done():
			}
			continue
		}
		if p.head < len(p.box) {
			m := p.box[p.head]
			p.box[p.head] = Message{}
			p.head++
			if p.head == len(p.box) {
				p.box, p.head = p.box[:0], 0
			} else if p.head > 64 && p.head*2 >= len(p.box) {
				n := copy(p.box, p.box[p.head:])
				clear(p.box[n:])
				p.box, p.head = p.box[:n], 0
			}
			p.waiting = false
			p.mu.Unlock()
			return m, nil
		}
		p.waiting = true
		p.mu.Unlock()
		select {
		case <-p.wake:
		case <-ctx.Done():
			p.setWaiting(false)
			return Message{}, ctx.Err()
		case <-p.ctx.Done():
		}
	}
}

func (p *Process) setWaiting(w bool) {
	p.mu.Lock()
	p.waiting = w
	p.mu.Unlock()
}

// Mailbox returns how many messages wait in the mailbox.
func (p *Process) Mailbox() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.box) - p.head
}

// Gate blocks while the process is stopped; it fails when the process has
// ended or ctx is done. Every kernel call passes it first.
func (p *Process) Gate(ctx context.Context) error {
	for {
		p.mu.Lock()
		dead, stopped, cont := p.dead, p.stopped, p.cont
		p.mu.Unlock()
		switch {
		case dead:
			return p.exitedErr()
		case !stopped:
			return nil
		}
		p.gated.Add(1)
		select {
		case <-cont:
		case <-ctx.Done():
			p.gated.Add(-1)
			return ctx.Err()
		case <-p.ctx.Done():
		}
		p.gated.Add(-1)
	}
}

func (p *Process) alive() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return p.exitedErrLocked()
	}
	return nil
}

func (p *Process) exitedErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitedErrLocked()
}

func (p *Process) exitedErrLocked() error {
	return fmt.Errorf("%w: process %v ended (%s)", ErrExited, p.pid, p.reason)
}

// Register gives the process a name in the kernel's name service; Lookup
// finds it. The name is cleared when the process ends. It fails with
// ErrNameTaken when a live process holds the name.
func (p *Process) Register(name string) error {
	if err := p.alive(); err != nil {
		return err
	}
	return p.k.register(p, name)
}

// Link links p and other: when either ends abnormally the other is killed
// (or, trapping exits, receives a *Down). It fails with ErrNoProcess when
// other is not alive.
func (p *Process) Link(other PID) error {
	if err := p.alive(); err != nil {
		return err
	}
	return p.k.link(p, other)
}

// Unlink removes a link; unlinking processes that are not linked is a no-op.
func (p *Process) Unlink(other PID) {
	p.k.unlink(p, other)
}

// Monitor asks for a *Down message when other ends. Monitoring a process
// that is not alive delivers a Down with reason "noproc" at once.
func (p *Process) Monitor(other PID) error {
	if err := p.alive(); err != nil {
		return err
	}
	p.k.monitor(p, other)
	return nil
}

// Demonitor cancels Monitor: once it returns, no Down for other is
// delivered (one delivered before stays in the mailbox).
func (p *Process) Demonitor(other PID) {
	p.mu.Lock()
	p.monitoring.remove(other)
	p.mu.Unlock()
	if t := p.k.lookupPID(other); t != nil {
		t.mu.Lock()
		t.monitors.remove(p.pid)
		t.mu.Unlock()
	}
}

// Spawn starts a child process. It needs the spawn right; the child's
// grants MUST be a subset of p's (they are derived from p's token, so
// revoking p's token revokes the child's), and its quota account is a child
// of p's: charges reach every ancestor, and the child takes one of p's
// "children" slots until it ends.
func (p *Process) Spawn(main Main, opts SpawnOptions) (*Process, error) {
	if err := p.Gate(p.ctx); err != nil {
		return nil, err
	}
	if err := p.Check(capability.Spawn, ""); err != nil {
		return nil, err
	}
	return p.k.spawn(p, main, opts)
}

// Check verifies that p's token grants right on resource and consumes one
// use of it. A refusal says which right was missing and is logged as a
// "refused" kernel event.
func (p *Process) Check(right capability.Right, resource string) error {
	p.mu.Lock()
	held, dead := p.token, p.dead
	p.mu.Unlock()
	if dead {
		return p.exitedErr()
	}
	var err error
	if held == nil {
		err = fmt.Errorf("%w: process %v holds no capability token, so it lacks the %q right on %q (spawn it with SpawnOptions.Grants)", capability.ErrDenied, p.pid, right, resource)
	} else {
		err = held.Check(p.holder, right, resource)
	}
	if err != nil {
		p.k.refused(p, right, resource, err)
	}
	return err
}

// Charge charges amount of meter to p's account and every ancestor,
// all-or-nothing. A refused charge ends p with reason quota:<meter> (its
// siblings keep running) and returns the *capability.QuotaError.
func (p *Process) Charge(m capability.Meter, amount float64) error {
	if err := p.alive(); err != nil {
		return err
	}
	if amount == 0 {
		return nil
	}
	if err := p.acct.Charge(m, amount); err != nil {
		var qe *capability.QuotaError
		if errors.As(err, &qe) {
			p.k.exit(p, Reason{Kind: Quota, Detail: string(qe.Meter)})
		}
		return err
	}
	p.k.charged(p, m, amount)
	return nil
}

// pidSet is a set of PIDs: a slice while small (most processes have a link
// or two), a map once large (a supervisor with thousands of children), so
// that add and remove stay O(1) amortized.
type pidSet struct {
	small []PID
	big   map[PID]struct{}
}

const pidSetSmall = 8

func (s *pidSet) add(pid PID) {
	if s.big != nil {
		s.big[pid] = struct{}{}
		return
	}
	if slices.Contains(s.small, pid) {
		return
	}
	if len(s.small) < pidSetSmall {
		s.small = append(s.small, pid)
		return
	}
	s.big = make(map[PID]struct{}, 2*pidSetSmall)
	for _, x := range s.small {
		s.big[x] = struct{}{}
	}
	s.big[pid] = struct{}{}
	s.small = nil
}

func (s *pidSet) has(pid PID) bool {
	if s.big != nil {
		_, ok := s.big[pid]
		return ok
	}
	return slices.Contains(s.small, pid)
}

func (s *pidSet) remove(pid PID) {
	if s.big != nil {
		delete(s.big, pid)
		return
	}
	if i := slices.Index(s.small, pid); i >= 0 {
		s.small = slices.Delete(s.small, i, i+1)
	}
}

// all returns the members (in insertion order while small).
func (s *pidSet) all() []PID {
	if s.big == nil {
		return s.small
	}
	out := make([]PID, 0, len(s.big))
	for pid := range s.big {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// deliverIf appends m to the mailbox if the process is alive and cond (nil:
// true), evaluated under the process's lock, holds: the check and the
// delivery are one step for exit racing Demonitor or Unlink. It reports
// whether m was delivered.
func (p *Process) deliverIf(cond func() bool, m Message) bool {
	p.mu.Lock()
	if p.dead || (cond != nil && !cond()) {
		p.mu.Unlock()
		return false
	}
	p.box = append(p.box, m)
	w := p.waiting && !p.stopped
	p.mu.Unlock()
	if w {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// HoldRun ties a tool run to p: when p ends, cancel is called
// synchronously, before p's rights are revoked. IMPORTANT: a run MUST see
// its own cancellation before any refusal that revocation causes, or a
// shutdown would end it as failed instead of leaving it resumable. It
// returns false, calling nothing, when p has already ended; release
// unties the run once it is over.
func (p *Process) HoldRun(cancel context.CancelFunc) (release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return nil, false
	}
	if p.runs == nil {
		p.runs = map[uint64]context.CancelFunc{}
	}
	p.nextRun++
	id := p.nextRun
	p.runs[id] = cancel
	return func() {
		p.mu.Lock()
		delete(p.runs, id)
		p.mu.Unlock()
	}, true
}

// Covers reports whether p's token, live, grants right on resource, with
// no side effect: for filtering listings, never for authorizing (Check
// authorizes, and logs a refusal).
func (p *Process) Covers(right capability.Right, resource string) bool {
	p.mu.Lock()
	held, dead := p.token, p.dead
	p.mu.Unlock()
	return !dead && held != nil && held.Covers(right, resource)
}

// WallDeadline is when the wall_ms quota ends p (zero: no wall quota). A
// tool run p starts MUST NOT outlive it.
func (p *Process) WallDeadline() time.Time { return p.wallDeadline }

// CountCall counts one kernel tool call p made and that was performed (not
// refused): ProcInfo.Calls, shown by ps.
func (p *Process) CountCall() { p.calls.Add(1) }
