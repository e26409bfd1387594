package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/clip"
)

// SpawnOptions configure a new process. The zero value is a nameless,
// unlinked process with no rights and the parent's quota.
type SpawnOptions struct {
	// Name registers the process in the name service (see Lookup).
	Name string
	// Image names what the process runs, for ps and events ("agent",
	// "supervisor" ...).
	Image string
	// Grants are the child's rights. From a process they MUST be a subset of
	// the parent's; from the kernel (Kernel.Spawn) any grant is minted.
	Grants []capability.Grant
	// Caveats restrict the child's token further (expiry, use count).
	Caveats capability.Caveats
	// Quota limits the child's own account; absent meters are limited only
	// by the ancestors.
	Quota capability.Limits
	// Link links the child with its parent (see Process.Link).
	Link bool
	// Deadline ends the child with reason "deadline" after this long.
	Deadline time.Duration
	// From, when set (Kernel.Spawn only: a process's child always derives
	// from its parent), is the token the child's is delegated from instead
	// of minted, e.g. a client's bearer token: it MUST verify with the
	// kernel's authority, Grants MUST be covered by its grants (nil: the
	// same grants), and every caveat of it carries over to the child
	// (expiry, use count), so that the process can never do more than the
	// token allows; revoking it revokes the child's. Its MaxUses counts the
	// child's own checks (capability counts uses per token id).
	From *capability.Token

	restore *restoreState // set by Restore only
}

// Options configure a kernel. The zero value works: a fresh capability
// authority, unlimited quota, slog.Default, 1024 events kept.
type Options struct {
	// Authority signs and checks capability tokens (nil: a fresh one).
	Authority *capability.Authority
	// Quota limits the root account every process is charged to.
	Quota capability.Limits
	// Logger receives the kernel's logs (nil: slog.Default()).
	Logger *slog.Logger
	// Events is how many recent kernel events are kept (0: 1024).
	Events int
	// Now is the kernel clock (nil: time.Now).
	Now func() time.Time
	// OnEvent, when set, is called with every kernel event, on the
	// goroutine that caused it. It MUST NOT block or call the kernel.
	OnEvent func(Event)
	// Ledger, when set, keeps the spending of the cumulative meters
	// (capability.Cumulative) across restarts: the root account's under
	// the key "node" when Quota limits one of them, and a process's under
	// "process:<name>" when it is spawned with a Name and a Quota limiting
	// one of them. A process spawned under a persisted name starts with
	// what that name spent before. (nil: spending is kept in memory only.)
	Ledger capability.Ledger
	// Snapshots, when set, stores the snapshots Kernel.Snapshot takes and
	// finds them by id for LoadSnapshot (the runtime's keeps them in the
	// journal: JournalSnapshots). nil: snapshots are returned, not kept.
	Snapshots SnapshotStore
}

// LedgerKey is the ledger key of the account of a process spawned with
// SpawnOptions.Name name ("" for the root account: "node").
func LedgerKey(name string) string {
	if name == "" {
		return "node"
	}
	return "process:" + name
}

// Kernel is the process table: spawn, signals, links, monitors, names,
// capabilities and quotas of agent processes. It is safe for concurrent use.
type Kernel struct {
	opts   Options
	auth   *capability.Authority
	root   *capability.Account
	log    *slog.Logger
	events *eventLog
	now    func() time.Time
	next   atomic.Uint64
	mains  sync.WaitGroup

	shards [procShards]procShard // the process table, sharded by PID

	mu     sync.RWMutex // guards names, images and closed
	names  map[string]PID
	images map[string]Main
	closed bool

	hooks atomic.Pointer[[]func(Event)] // telemetry; copy on write, so Boot may add while processes run

	stopMu     sync.Mutex      // serializes Stop and Continue (setStopped)
	restoreMu  sync.Mutex      // serializes Restore: check, spawn and consume are one step on this node
	restoredMu sync.Mutex      // guards restored
	restored   map[string]bool // keys of the snapshots restored by this kernel (SnapshotKey)
}

// New returns a kernel with no processes.
func New(opts Options) (*Kernel, error) {
	auth := opts.Authority
	if auth == nil {
		var err error
		if auth, err = capability.NewAuthority(nil, opts.Now); err != nil {
			return nil, err
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Events <= 0 {
		opts.Events = 1024
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	root := capability.NewAccount("kernel", opts.Quota)
	if opts.Ledger != nil && capability.HasCumulative(opts.Quota) {
		if err := root.Persist(opts.Ledger, LedgerKey("")); err != nil {
			return nil, err
		}
	}
	return &Kernel{
		opts:   opts,
		auth:   auth,
		root:   root,
		log:    opts.Logger,
		events: newEventLog(opts.Events),
		now:    opts.Now,
		names:  map[string]PID{},
		images: map[string]Main{},
	}, nil
}

// RegisterImage names main so that a Spawn message (kernelpb.Spawn, which
// cannot carry a function) can start it: the image is what the process
// runs, shown in ps. Registering a name again replaces its Main for the
// processes spawned from then on.
func (k *Kernel) RegisterImage(name string, main Main) error {
	if name == "" || main == nil {
		return fmt.Errorf("%w: RegisterImage needs a name and a Main function", ErrInvalid)
	}
	k.mu.Lock()
	k.images[name] = main
	k.mu.Unlock()
	return nil
}

// Images returns the registered image names, sorted.
func (k *Kernel) Images() []string {
	k.mu.RLock()
	out := make([]string, 0, len(k.images))
	for name := range k.images {
		out = append(out, name)
	}
	k.mu.RUnlock()
	slices.Sort(out)
	return out
}

// image returns the Main registered as name, or an error wrapping
// ErrInvalid that lists the registered images.
func (k *Kernel) image(name string) (Main, error) {
	k.mu.RLock()
	main := k.images[name]
	k.mu.RUnlock()
	if main != nil {
		return main, nil
	}
	known := k.Images()
	if len(known) == 0 {
		return nil, fmt.Errorf("%w: no image %q is registered, and none is: register the program with Kernel.RegisterImage before spawning it by message", ErrInvalid, name)
	}
	return nil, fmt.Errorf("%w: no image %q is registered; the registered images are %s", ErrInvalid, name, strings.Join(known, ", "))
}

// Authority returns the kernel's capability authority.
func (k *Kernel) Authority() *capability.Authority { return k.auth }

// Account returns the root quota account.
func (k *Kernel) Account() *capability.Account { return k.root }

// Spawn starts a process on behalf of the kernel (the embedding program):
// its grants are minted, not derived, and its account is a child of the
// root account.
func (k *Kernel) Spawn(main Main, opts SpawnOptions) (*Process, error) {
	return k.spawn(nil, main, opts)
}

func (k *Kernel) spawn(parent *Process, main Main, opts SpawnOptions) (*Process, error) {
	if main == nil {
		return nil, fmt.Errorf("%w: spawn needs a Main function", ErrInvalid)
	}
	pid := PID(k.next.Add(1))
	holder := "pid:" + strconv.FormatUint(uint64(pid), 10)
	parentPID := PID(0)
	if parent != nil {
		parentPID = parent.pid
	}
	acct, err := k.spawnAccount(parent, holder, opts)
	if err != nil {
		return nil, err
	}
	if opts.From != nil && parent != nil {
		acct.Close()
		return nil, fmt.Errorf("%w: SpawnOptions.From is for Kernel.Spawn only: a process's child derives its token from its parent's", ErrInvalid)
	}
	tok, err := k.spawnToken(parent, holder, opts)
	if err != nil {
		acct.Close()
		return nil, err
	}
	now := k.now()
	p := &Process{
		k: k, pid: pid, parent: parentPID, image: opts.Image, holder: holder, started: now,
		acct: acct, token: tok, wake: make(chan struct{}, 1),
	}
	p.ctx, p.cancel = context.WithCancelCause(context.Background())
	if opts.restore != nil {
		p.restored, p.box, p.state = true, opts.restore.box, opts.restore.state
	}
	if err := k.insert(p, opts.Name); err != nil {
		acct.Close()
		if tok != nil {
			k.auth.RevokeHolder(holder)
		}
		return nil, err
	}
	if opts.Link && parent != nil {
		if err := k.link(parent, pid); err != nil {
			k.exit(p, Reason{Kind: Killed, Detail: "parent gone before link"})
		}
	}
	k.armDeadlines(p, parent, opts.Deadline, now)
	k.emitAt(now, &Event{Kind: EventSpawn, PID: pid, Parent: parentPID, Name: opts.Name, Detail: opts.Image})
	go k.run(p, main)
	return p, nil
}

// spawnAccount opens the new process's quota account under its parent's
// (the root account for the kernel's own), persisted under its name when
// its quota is cumulative, carrying a restored process's use. A parent
// whose own quota refuses the child exits with a quota reason.
func (k *Kernel) spawnAccount(parent *Process, holder string, opts SpawnOptions) (*capability.Account, error) {
	parentAcct := k.root
	if parent != nil {
		parentAcct = parent.acct
	}
	acct, err := parentAcct.Child(holder, opts.Quota)
	if err != nil {
		var qe *capability.QuotaError
		if parent != nil && errors.As(err, &qe) {
			k.exit(parent, Reason{Kind: Quota, Detail: string(qe.Meter)})
		}
		return nil, fmt.Errorf("spawn: %w", err)
	}
	if opts.Name != "" && k.opts.Ledger != nil && capability.HasCumulative(opts.Quota) {
		if err := acct.Persist(k.opts.Ledger, LedgerKey(opts.Name)); err != nil {
			acct.Close()
			return nil, fmt.Errorf("spawn: %w", err)
		}
	}
	if opts.restore != nil {
		acct.Carry(opts.restore.used) // before the wall_ms deadline is computed
	}
	return acct, nil
}

// spawnToken is the new process's capability token: delegated from
// opts.From, or minted (for the kernel's own) or delegated from the
// parent's for opts.Grants; nil without grants.
func (k *Kernel) spawnToken(parent *Process, holder string, opts SpawnOptions) (*capability.Held, error) {
	var t capability.Token
	var err error
	switch {
	case opts.From != nil:
		t, err = k.auth.Delegate(*opts.From, holder, opts.Grants, opts.Caveats)
	case len(opts.Grants) == 0:
		return nil, nil
	case parent == nil:
		t = k.auth.Mint(holder, opts.Grants, opts.Caveats)
	default:
		ptok, ok := parent.Token()
		if !ok {
			return nil, fmt.Errorf("spawn: %w: process %v holds no token to derive the child's grants from", capability.ErrDenied, parent.pid)
		}
		t, err = k.auth.Delegate(ptok, holder, opts.Grants, opts.Caveats)
	}
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	tok, err := k.auth.Hold(t)
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	return tok, nil
}

// insert puts p in the process table, under name when there is one.
func (k *Kernel) insert(p *Process, name string) error {
	// The read lock keeps Close out while the process is inserted; only a
	// name needs the write lock.
	lock, unlock := k.mu.RLock, k.mu.RUnlock
	if name != "" {
		lock, unlock = k.mu.Lock, k.mu.Unlock
	}
	lock()
	defer unlock()
	if k.closed {
		return ErrClosed
	}
	if name != "" {
		if cur, taken := k.names[name]; taken {
			return fmt.Errorf("%w: %q is held by %v", ErrNameTaken, name, cur)
		}
		k.names[name] = p.pid
		p.name = name
	}
	k.shard(p.pid).put(p)
	k.mains.Add(1)
	return nil
}

// armDeadlines arms p's deadline and its wall_ms lifetime: the tightest of
// the process's own limit and its parent's (a child spawned late does not
// outlive it).
func (k *Kernel) armDeadlines(p, parent *Process, deadline time.Duration, now time.Time) {
	if deadline > 0 {
		t := time.AfterFunc(deadline, func() { k.exit(p, Reason{Kind: Deadline, Detail: deadline.String()}) })
		context.AfterFunc(p.ctx, func() { t.Stop() })
	}
	if left, ok := p.acct.Left(capability.WallMS); ok {
		p.wallDeadline = now.Add(time.Duration(left * float64(time.Millisecond)))
	}
	if parent != nil && !parent.wallDeadline.IsZero() && (p.wallDeadline.IsZero() || parent.wallDeadline.Before(p.wallDeadline)) {
		p.wallDeadline = parent.wallDeadline
	}
	if !p.wallDeadline.IsZero() {
		t := time.AfterFunc(p.wallDeadline.Sub(now), func() { k.exit(p, Reason{Kind: Quota, Detail: string(capability.WallMS)}) })
		context.AfterFunc(p.ctx, func() { t.Stop() })
	}
}

// run is a process's goroutine.
func (k *Kernel) run(p *Process, main Main) {
	defer k.mains.Done()
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				k.log.Error("kernel: process panicked", slog.Any("pid", p.pid), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
				err = fmt.Errorf("panic: %v", v)
			}
		}()
		err = main(p.ctx, p)
	}()
	k.exit(p, reasonOf(err))
}

// exit ends p with r: it runs once per process, whoever gets there first
// (Main returning, Kill, a deadline, a quota, a link, Close).
func (k *Kernel) exit(p *Process, r Reason) { k.exitCapture(p, r, nil) }

// tellMonitor sends the Down of a process that ended to w, a process
// monitoring it, unless w has demonitored it meanwhile.
func (k *Kernel) tellMonitor(w PID, down Down) {
	t := k.lookupPID(w)
	if t == nil {
		return
	}
	t.deliverIf(func() bool {
		if !t.monitoring.has(down.PID) {
			return false // demonitored meanwhile
		}
		t.monitoring.remove(down.PID)
		return true
	}, Message{Body: &down})
}

// tellLink tells l, a process linked to one that ended (down), unless it
// has unlinked meanwhile: a process trapping exits receives the Down (with
// Link set); any other is killed, unless the end was Normal.
func (k *Kernel) tellLink(l PID, down Down) {
	t := k.lookupPID(l)
	if t == nil {
		return
	}
	down.Link = true
	kill := false
	t.deliverIf(func() bool {
		if !t.links.has(down.PID) {
			return false // unlinked meanwhile
		}
		t.links.remove(down.PID)
		kill = !t.trapExits && down.Reason.Kind != Normal
		return t.trapExits
	}, Message{Body: &down})
	if kill {
		k.exit(t, Reason{Kind: Killed, Detail: fmt.Sprintf("linked process %v ended (%s)", down.PID, down.Reason)})
	}
}

// exitCapture is exit calling capture (when not nil), under p's lock, just
// before p is marked dead: Snapshot's capture and the kill are one step.
func (k *Kernel) exitCapture(p *Process, r Reason, capture func()) {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return
	}
	if capture != nil {
		capture()
	}
	p.dead, p.reason = true, r
	name := p.name
	links, monitors, watched := p.links.all(), p.monitors.all(), p.monitoring.all()
	p.links, p.monitors, p.monitoring = pidSet{}, pidSet{}, pidSet{}
	p.box, p.head = nil, 0
	runs := p.runs
	p.runs = nil
	p.mu.Unlock()

	// First: the process's tool runs are cancelled (see HoldRun), before
	// anything they could observe changes.
	for _, cancel := range runs {
		cancel()
	}
	k.shard(p.pid).del(p.pid)
	if name != "" {
		k.mu.Lock()
		if k.names[name] == p.pid {
			delete(k.names, name)
		}
		k.mu.Unlock()
	}

	if p.token != nil {
		k.auth.RevokeHolder(p.holder)
	}
	p.acct.Close()
	k.emit(&Event{Kind: EventExit, PID: p.pid, Parent: p.parent, Name: name, Reason: r.String()})

	for _, w := range watched { // a dead watcher needs no Down
		if t := k.lookupPID(w); t != nil {
			t.mu.Lock()
			t.monitors.remove(p.pid)
			t.mu.Unlock()
		}
	}
	down := Down{PID: p.pid, Name: name, Reason: r}
	for _, w := range monitors {
		k.tellMonitor(w, down)
	}
	for _, l := range links {
		k.tellLink(l, down)
	}
	// Last: Done (and Wait) MUST mean the process is gone everywhere: out
	// of the table and the names, tokens revoked, watchers told.
	p.cancel(&ExitError{Reason: r})
}

func (k *Kernel) lookupPID(pid PID) *Process {
	return k.shard(pid).get(pid)
}

// Process returns the live process pid (nil when it is not alive).
func (k *Kernel) Process(pid PID) *Process { return k.lookupPID(pid) }

// Lookup finds a registered name.
func (k *Kernel) Lookup(name string) (PID, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	pid, ok := k.names[name]
	return pid, ok
}

func (k *Kernel) register(p *Process, name string) error {
	if name == "" {
		return fmt.Errorf("%w: register needs a name", ErrInvalid)
	}
	k.mu.Lock()
	if cur, taken := k.names[name]; taken && cur != p.pid {
		k.mu.Unlock()
		return fmt.Errorf("%w: %q is held by %v", ErrNameTaken, name, cur)
	}
	p.mu.Lock()
	if p.dead { // exit already cleared the names: registering now would leak one
		p.mu.Unlock()
		k.mu.Unlock()
		return p.exitedErr()
	}
	old := p.name
	p.name = name
	p.mu.Unlock()
	if old != "" && old != name {
		delete(k.names, old)
	}
	k.names[name] = p.pid
	k.mu.Unlock()
	k.emit(&Event{Kind: EventRegister, PID: p.pid, Name: name})
	return nil
}

func (k *Kernel) link(p *Process, other PID) error {
	if other == p.pid {
		return fmt.Errorf("%w: a process cannot link to itself", ErrInvalid)
	}
	t := k.lookupPID(other)
	if t == nil {
		return fmt.Errorf("%w: %v (link from %v)", ErrNoProcess, other, p.pid)
	}
	// Lock in PID order: two processes linking each other must not deadlock.
	a, b := p, t
	if a.pid > b.pid {
		a, b = b, a
	}
	a.mu.Lock()
	b.mu.Lock()
	dead := a.dead || b.dead
	if !dead {
		a.links.add(b.pid)
		b.links.add(a.pid)
	}
	b.mu.Unlock()
	a.mu.Unlock()
	if dead {
		return fmt.Errorf("%w: %v (link from %v)", ErrNoProcess, other, p.pid)
	}
	return nil
}

func (k *Kernel) unlink(p *Process, other PID) {
	p.mu.Lock()
	p.links.remove(other)
	p.mu.Unlock()
	if t := k.lookupPID(other); t != nil {
		t.mu.Lock()
		t.links.remove(p.pid)
		t.mu.Unlock()
	}
}

func (k *Kernel) monitor(p *Process, other PID) {
	// Listed on the watcher first: exit delivers only to watchers that
	// list it, so a Down can be neither lost nor sent after Demonitor.
	p.mu.Lock()
	p.monitoring.add(other)
	p.mu.Unlock()
	if t := k.lookupPID(other); t != nil {
		t.mu.Lock()
		if !t.dead {
			t.monitors.add(p.pid)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
	p.deliverIf(func() bool {
		if !p.monitoring.has(other) {
			return false // its exit delivered the Down already
		}
		p.monitoring.remove(other)
		return true
	}, Message{Body: &Down{PID: other, Reason: Reason{Kind: NoProc}}})
}

// Send delivers body to pid from the embedding program (From is 0).
func (k *Kernel) Send(pid PID, body any) error {
	t := k.lookupPID(pid)
	if t == nil || !t.deliver(Message{Body: body}) {
		return fmt.Errorf("%w: %v", ErrNoProcess, pid)
	}
	return nil
}

// Kill ends pid at once with reason "killed" (by names who asked). Main's
// context is cancelled; the process is dead for the kernel immediately.
func (k *Kernel) Kill(pid PID, by string) error {
	t := k.lookupPID(pid)
	if t == nil {
		return fmt.Errorf("%w: %v", ErrNoProcess, pid)
	}
	k.emit(&Event{Kind: EventSignal, PID: pid, Detail: "kill"})
	k.exit(t, Reason{Kind: Killed, Detail: by})
	return nil
}

// Terminate asks pid to end: it receives a *Term message it may handle
// (clean up, then return). Unlike Kill it never forces the end.
func (k *Kernel) Terminate(pid PID, from PID) error {
	t := k.lookupPID(pid)
	if t == nil {
		return fmt.Errorf("%w: %v", ErrNoProcess, pid)
	}
	if _, ended := t.Reason(); ended {
		return fmt.Errorf("%w: %v", ErrNoProcess, pid)
	}
	// Recorded before the delivery: a process that ends on its Term at
	// once records its exit after the signal that caused it, never before.
	k.emit(&Event{Kind: EventSignal, PID: pid, Detail: "term"})
	if !t.deliver(Message{From: from, Body: &Term{From: from}}) {
		return fmt.Errorf("%w: %v (it ended as the term was sent)", ErrNoProcess, pid)
	}
	return nil
}

// Stop pauses pid: it receives no message and its kernel calls wait until
// Continue. Code between kernel calls runs on (Go cannot pause a goroutine).
func (k *Kernel) Stop(pid PID) error { return k.setStopped(pid, true) }

// Continue resumes a process paused by Stop.
func (k *Kernel) Continue(pid PID) error { return k.setStopped(pid, false) }

func (k *Kernel) setStopped(pid PID, stop bool) error {
	t := k.lookupPID(pid)
	if t == nil {
		return fmt.Errorf("%w: %v", ErrNoProcess, pid)
	}
	k.stopMu.Lock()
	defer k.stopMu.Unlock()
	t.mu.Lock()
	changed := t.stopped != stop && !t.dead
	t.mu.Unlock()
	if !changed {
		return nil
	}
	if !stop {
		// Recorded before the process runs again: what it does next (an
		// exit on a waiting Term) is recorded after. Only Stop and
		// Continue change stopped, and stopMu serializes them.
		k.emit(&Event{Kind: EventSignal, PID: pid, Detail: "cont"})
	}
	t.mu.Lock()
	if stop && t.dead { // it ended meanwhile: nothing to stop
		t.mu.Unlock()
		return nil
	}
	wake := !stop && t.waiting
	t.stopped = stop
	if stop {
		t.cont = make(chan struct{})
	} else {
		close(t.cont) // wakes every waiter: Recv and concurrent kernel calls
		t.cont = nil
	}
	t.mu.Unlock()
	if wake { // a Recv parked before the Stop waits on wake, not on cont
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
	if stop {
		k.emit(&Event{Kind: EventSignal, PID: pid, Detail: "stop"})
	}
	return nil
}

// Close ends every process with reason "shutdown" and waits for their Main
// functions to return, or for ctx. No process can be spawned after Close.
func (k *Kernel) Close(ctx context.Context) error {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
	for _, p := range k.all() {
		k.exit(p, Reason{Kind: Shutdown})
	}
	done := make(chan struct{})
	go func() { k.mains.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kernel: processes still running after close (a Main ignores its context): %w", ctx.Err())
	}
}

func (k *Kernel) refused(p *Process, right capability.Right, resource string, err error) {
	k.emit(&Event{Kind: EventRefused, PID: p.pid, Name: p.Name(), Detail: refusedDetail(right, resource, err)})
}

func refusedDetail(right capability.Right, resource string, err error) string {
	return fmt.Sprintf("%s on %q: %s", right, clip.Text(resource), clip.Text(err.Error()))
}

func (k *Kernel) charged(p *Process, m capability.Meter, amount float64) {
	k.emit(&Event{Kind: EventCharge, PID: p.pid, Name: p.Name(), Meter: string(m), Amount: amount})
}

const procShards = 16

// procShard is one shard of the process table: spawns and exits of
// different processes rarely contend.
type procShard struct {
	mu sync.RWMutex
	m  map[PID]*Process
	_  [32]byte // keep shards on separate cache lines
}

func (k *Kernel) shard(pid PID) *procShard { return &k.shards[pid%procShards] }

func (s *procShard) put(p *Process) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[PID]*Process{}
	}
	s.m[p.pid] = p
	s.mu.Unlock()
}

func (s *procShard) del(pid PID) {
	s.mu.Lock()
	delete(s.m, pid)
	s.mu.Unlock()
}

func (s *procShard) get(pid PID) *Process {
	s.mu.RLock()
	p := s.m[pid]
	s.mu.RUnlock()
	return p
}

// all returns every live process, in no order.
func (k *Kernel) all() []*Process {
	var out []*Process
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.RLock()
		for _, p := range s.m {
			out = append(out, p)
		}
		s.mu.RUnlock()
	}
	return out
}

// addHook subscribes h to every event from now on.
func (k *Kernel) addHook(h func(Event)) {
	for {
		old := k.hooks.Load()
		var next []func(Event)
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, h)
		if k.hooks.CompareAndSwap(old, &next) {
			return
		}
	}
}
