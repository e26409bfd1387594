package system

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Errors returned by this package.
var (
	// ErrShutdown is returned by SpawnNamed (and is the panic value of
	// Spawn) once Shutdown has been called: the system accepts no new
	// top-level actor. Spawn before Shutdown, or build a new System.
	ErrShutdown = errors.New("system: the actor system is shut down; spawn before calling Shutdown or create a new System")

	// ErrStopTimeout is wrapped by the *StopError that Shutdown returns
	// when some top-level actors did not stop within its timeout.
	ErrStopTimeout = errors.New("system: actors did not stop in time")

	// ErrNotProtobuf is wrapped by the error of CheckRemote for a message
	// that cannot cross a node boundary.
	ErrNotProtobuf = errors.New("system: remote messages must be protobuf messages")
)

// StopError is returned by Shutdown when top-level actors did not stop
// within its timeout. errors.Is(err, ErrStopTimeout) holds.
type StopError struct {
	// Timeout is the bound Shutdown was given.
	Timeout time.Duration
	// PIDs are the actors not known to have stopped, in the order
	// Shutdown tried them (reverse spawn order): the first one did not
	// stop in time; the ones after it were sent Stop once the time was
	// up and were not waited for.
	PIDs []*actor.PID
}

// Error names the actors and says what to look at.
func (e *StopError) Error() string {
	ids := make([]string, len(e.PIDs))
	for i, p := range e.PIDs {
		ids[i] = p.Id
	}
	return fmt.Sprintf("system: %d top-level actor(s) did not stop within %v: %s; an actor's Stopping/Stopped handler "+
		"(or one of its children's) is blocking: fix it or give Shutdown a longer timeout",
		len(e.PIDs), e.Timeout, strings.Join(ids, ", "))
}

// Unwrap returns ErrStopTimeout.
func (e *StopError) Unwrap() error { return ErrStopTimeout }

// DefaultStopTimeout is the bound Shutdown uses when it is given a timeout
// of zero or less: protoactor's own StopFuture gives up after the same time.
const DefaultStopTimeout = 10 * time.Second

// Options configures New. The zero value is ready to use.
type Options struct {
	// Logger receives protoactor's log lines and every actor's
	// ctx.Logger() lines, with the attributes lib=protoactor and
	// system=<id>. nil means slog.Default().
	Logger *slog.Logger
	// Level is the lowest level that reaches Logger from the actor
	// system's logger. nil means slog.LevelWarn: protoactor logs every
	// actor system start, every panic ("[ACTOR] Recovering") and dead
	// letters at Info. A slog.Level or a *slog.LevelVar fits here.
	//
	// IMPORTANT: the filter applies to ctx.Logger() inside actors too
	// (protoactor hands every actor the system's logger): an actor that
	// needs its Info lines kept MUST log through its own logger.
	Level slog.Leveler
	// RepeatWindow rate-limits the actor system's warnings and errors
	// (and the routine ones logged at Info): one message is logged at
	// most once per window; the next one logged carries repeated=<how many
	// were dropped>. During a fault protoactor repeats the same lines
	// about ten times a second (a peer it cannot reach, gossip from a
	// member it does not list). Zero means DefaultRepeatWindow.
	RepeatWindow time.Duration
}

// System is a protoactor actor system with fences around protoactor's
// known misbehaviours (see the package documentation). Its methods are
// safe for concurrent use.
type System struct {
	sys  *actor.ActorSystem
	root *actor.RootContext // pristine: never handed out, never mutated

	mu      sync.Mutex
	tops    []*actor.PID // top-level actors spawned through the System, in spawn order
	pruneAt int          // prune stopped actors from tops when it reaches this length
	closed  bool

	shutdown    sync.Once
	shutdownErr error
}

// New builds an actor system whose log lines go to opts.Logger, filtered at
// opts.Level.
func New(opts Options) *System {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var level slog.Leveler = slog.LevelWarn
	if opts.Level != nil {
		level = opts.Level
	}
	rep := &repeats{window: opts.RepeatWindow, seen: map[string]*repeat{}}
	if rep.window <= 0 {
		rep.window = DefaultRepeatWindow
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(sys *actor.ActorSystem) *slog.Logger {
		h := &levelHandler{min: level, next: logger.Handler(), rep: rep}
		return slog.New(h).With(slog.String("lib", "protoactor"), slog.String("system", sys.ID))
	}))
	return &System{sys: sys, root: actor.NewRootContext(sys, nil), pruneAt: 64}
}

// ActorSystem returns the underlying protoactor system, for what this
// package does not wrap (EventStream, ProcessRegistry, extensions, cluster).
//
// IMPORTANT: do not call its Shutdown (call System.Shutdown: the raw one
// stops no actor and panics when called twice) and do not call WithHeaders,
// WithSenderMiddleware or WithSpawnMiddleware on its Root (they change the
// root context every caller shares; use System.Root).
func (s *System) ActorSystem() *actor.ActorSystem { return s.sys }

// Root returns a new root context of the system, with no headers and no
// middleware: every call returns a distinct one, so WithHeaders,
// WithSenderMiddleware and WithSpawnMiddleware on it (which change the
// context they are called on) affect that caller only.
//
// IMPORTANT: actors spawned through a root context are not tracked:
// spawn top-level actors with System.Spawn or System.SpawnNamed, or
// Shutdown will not stop them.
func (s *System) Root() *actor.RootContext { return actor.NewRootContext(s.sys, nil) }

// Spawn starts a top-level actor with a generated name and tracks it for
// Shutdown. It panics with ErrShutdown after Shutdown, as protoactor's
// Spawn panics when it cannot spawn; use SpawnNamed to get an error.
func (s *System) Spawn(props *actor.Props) *actor.PID {
	pid, err := s.SpawnNamed(props, s.sys.ProcessRegistry.NextId())
	if err != nil {
		panic(err)
	}
	return pid
}

// SpawnNamed starts a top-level actor named name and tracks it for
// Shutdown. It returns protoactor's actor.ErrNameExists when the name is
// taken, and ErrShutdown after Shutdown.
func (s *System) SpawnNamed(props *actor.Props, name string) (*actor.PID, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrShutdown
	}
	// Spawn outside the lock: spawn middleware is user code and may spawn.
	pid, err := s.root.SpawnNamed(props, name)
	if err != nil {
		return pid, err
	}
	s.mu.Lock()
	if s.closed { // Shutdown took its list while we were spawning
		s.mu.Unlock()
		s.root.Stop(pid)
		return nil, ErrShutdown
	}
	s.tops = append(s.tops, pid)
	if len(s.tops) >= s.pruneAt {
		s.pruneLocked()
	}
	s.mu.Unlock()
	return pid, nil
}

// pruneLocked drops the top-level actors that have stopped on their own, so
// a system that spawns many short-lived top-level actors does not grow.
func (s *System) pruneLocked() {
	live := s.tops[:0]
	for _, pid := range s.tops {
		if _, ok := s.sys.ProcessRegistry.Get(pid); ok {
			live = append(live, pid)
		}
	}
	clear(s.tops[len(live):])
	s.tops = live
	s.pruneAt = max(64, 2*len(live))
}

// Shutdown stops every top-level actor spawned through Spawn and
// SpawnNamed, one at a time in reverse spawn order, waiting for each (its
// children stop first, as protoactor stops any actor), then shuts the
// protoactor system down. The whole stop is bounded by timeout (zero or
// less means DefaultStopTimeout); actors that did not stop in time are
// named in a *StopError, and the system is shut down all the same.
//
// Shutdown is idempotent and safe to call concurrently: every call returns
// the first call's result, after it has finished.
func (s *System) Shutdown(timeout time.Duration) error {
	s.shutdown.Do(func() {
		if timeout <= 0 {
			timeout = DefaultStopTimeout
		}
		s.mu.Lock()
		s.closed = true
		tops := s.tops
		s.tops = nil
		s.mu.Unlock()

		deadline := time.Now().Add(timeout)
		seen := map[string]bool{}
		var late []*actor.PID
		for i := len(tops) - 1; i >= 0; i-- {
			pid := tops[i]
			if seen[pid.Id] { // a name reused after its first actor stopped
				continue
			}
			seen[pid.Id] = true
			if !s.stop(pid, time.Until(deadline)) {
				late = append(late, pid)
			}
		}
		s.sys.Shutdown()
		if len(late) > 0 {
			s.shutdownErr = &StopError{Timeout: timeout, PIDs: late}
		}
	})
	return s.shutdownErr
}

// stop stops pid and waits up to d for it to terminate; it reports whether
// it did. It is Root.StopFuture(pid).Wait() with a bound of our choosing
// (StopFuture's is fixed at 10 s) and a watcher that outlives the wait
// (see stopWatch). With d <= 0 it only sends Stop.
func (s *System) stop(pid *actor.PID, d time.Duration) bool {
	p, ok := s.sys.ProcessRegistry.Get(pid)
	if !ok {
		return true // stopped on its own
	}
	if d <= 0 {
		p.Stop(pid)
		return false
	}
	w := &stopWatch{reg: s.sys.ProcessRegistry, done: make(chan struct{})}
	w.pid, _ = s.sys.ProcessRegistry.Add(w, "shutdown"+s.sys.ProcessRegistry.NextId())
	p.SendSystemMessage(pid, &actor.Watch{Watcher: w.pid})
	p.Stop(pid)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
		return true
	case <-t.C:
		return false
	}
}

// stopWatch is the process that watches an actor Shutdown stops. Unlike
// protoactor's Future it stays registered after Shutdown stops waiting,
// until the actor's Terminated arrives: a Terminated sent to a timed-out
// future is a dead letter (an Info line, and a throttling goroutine that
// outlives Shutdown by a second). An actor that never stops keeps its
// stopWatch registered.
type stopWatch struct {
	reg  *actor.ProcessRegistryValue
	pid  *actor.PID
	done chan struct{}
	once sync.Once
}

func (w *stopWatch) SendUserMessage(*actor.PID, any) {}

func (w *stopWatch) SendSystemMessage(_ *actor.PID, m any) {
	if _, ok := m.(*actor.Terminated); ok {
		w.once.Do(func() {
			w.reg.Remove(w.pid)
			close(w.done)
		})
	}
}

func (w *stopWatch) Stop(*actor.PID) {}

// CheckRemote returns nil when msg can be sent to an actor on another node,
// and otherwise an error wrapping ErrNotProtobuf that says what to do.
//
// IMPORTANT: a message sent through protoactor's remote MUST be a pointer
// to a protoc-gen-go generated message (it implements proto.Message)
// registered in the global protobuf registry (its Go package is linked
// in); the receiving node MUST link the same package. See the package
// documentation for what protoactor does otherwise.
func CheckRemote(msg any) error {
	if msg == nil {
		return fmt.Errorf("%w: the message is nil", ErrNotProtobuf)
	}
	m, ok := msg.(proto.Message)
	if !ok {
		return fmt.Errorf("%w: %T is not a proto.Message; define it in a .proto file, generate Go with protoc-gen-go "+
			"and send a pointer to the generated type (plain Go values work only between actors of one process)", ErrNotProtobuf, msg)
	}
	name := m.ProtoReflect().Descriptor().FullName()
	if _, err := protoregistry.GlobalTypes.FindMessageByName(name); err != nil {
		return fmt.Errorf("%w: %s (%T) is not in the global protobuf registry, so no node can decode it; "+
			"use the protoc-gen-go generated type, not a dynamic message", ErrNotProtobuf, name, msg)
	}
	return nil
}

// levelHandler drops the records below min and passes the rest to next,
// protoactor's repeated warnings and errors rate-limited (repeats).
type levelHandler struct {
	min  slog.Leveler
	next slog.Handler
	rep  *repeats // shared by the handler's clones
}

func (h *levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min.Level() && h.next.Enabled(ctx, l)
}

func (h *levelHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelInfo && routine[r.Message] {
		// protoactor logs a member going away as errors: routine in a
		// cluster (a node stopped, restarted or died), shown with -v.
		if slog.LevelInfo < h.min.Level() || !h.next.Enabled(ctx, slog.LevelInfo) {
			return nil
		}
		r.Level = slog.LevelInfo
	}
	if r.Level >= slog.LevelWarn || routine[r.Message] {
		n, ok := h.rep.pass(r.Message, r.Time)
		if !ok {
			return nil
		}
		if n > 0 {
			r = r.Clone()
			r.AddAttrs(slog.Int("repeated", n), slog.Duration("within", h.rep.window))
		}
	}
	return h.next.Handle(ctx, r)
}

// DefaultRepeatWindow is Options.RepeatWindow's default.
const DefaultRepeatWindow = 10 * time.Second

// repeats remembers, per message, when it was last logged and how many
// times it was dropped since.
type repeats struct {
	window time.Duration
	mu     sync.Mutex
	seen   map[string]*repeat
}

type repeat struct {
	at      time.Time
	dropped int
}

// pass reports whether a record with msg at t is logged, and how many
// were dropped before it.
func (r *repeats) pass(msg string, t time.Time) (dropped int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.IsZero() {
		t = time.Now()
	}
	e := r.seen[msg]
	if e == nil {
		if len(r.seen) >= 1024 { // messages are constants; bound it anyway
			clear(r.seen)
		}
		r.seen[msg] = &repeat{at: t}
		return 0, true
	}
	if t.Sub(e.at) < r.window {
		e.dropped++
		return 0, false
	}
	dropped, e.at, e.dropped = e.dropped, t, 0
	return dropped, true
}

// routine are protoactor's log messages about connections to a member that
// left, stopped or died, which it logs as warnings and errors: in a
// cluster they are what a member going away looks like, not a fault of
// this node. They are logged at Info (agentos' own cluster code logs what
// it does about a member that left, at the level it deserves).
var routine = map[string]bool{
	"Bad connection to the node health status":          true,
	"Failure reaching nodes":                            true,
	"Automanaged server stopping..!":                    true,
	"EndpointWriter lost connection":                    true,
	"EndpointWriter failed to create receive stream":    true,
	"EndpointWriter failed to connect":                  true,
	"EndpointWriter error when closing the client conn": true,
	"sendGossipForMember failed":                        true,
	"EndpointReader failed to read":                     true,
}

func (h *levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &levelHandler{min: h.min, next: h.next.WithAttrs(attrs), rep: h.rep}
}

func (h *levelHandler) WithGroup(name string) slog.Handler {
	return &levelHandler{min: h.min, next: h.next.WithGroup(name), rep: h.rep}
}
