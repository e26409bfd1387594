package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentos-run/agentos/capability"
)

// SnapshotVersion is the format of the snapshots this kernel writes. A
// snapshot of another version is refused by Restore (ErrInvalid) rather
// than misread.
const SnapshotVersion = 1

// sealPurpose names snapshots in capability.Authority.Seal.
const sealPurpose = "snapshot"

// Snapshot is a process's durable state, as the agent-OS kernel's
// snapshot(pid) keeps it: what it is (name, image), what it may do (its
// token's grants and caveats, never the token itself), what it has left to
// spend (its own quota limits and its use), the messages waiting in its
// mailbox and the state it chose to expose (Process.SetState).
//
// A Go stack cannot be serialized: Restore starts the image again with
// this state (its mailbox refilled, Process.State answering the exposed
// state), which is sound for a process whose state is its data, such as an
// agent loop whose run is journaled (package agent resumes it from the
// journal).
//
// IMPORTANT: a snapshot is sealed with the kernel's capability authority
// (capability.Authority.Seal) when it is taken, and Restore verifies the
// seal with its own authority before anything is started: an edited
// snapshot, or one sealed under another key, is refused, so that nobody
// can restore more rights or more budget than the process had. Nodes that
// restore each other's snapshots MUST share the signing key
// (capability.signing_key_env).
type Snapshot struct {
	Version int `json:"version"`
	// Taken is when the snapshot was taken (the kernel's clock).
	Taken time.Time `json:"taken"`
	// PID is the process the snapshot was taken of, on its kernel.
	PID PID `json:"pid"`
	// Name is its registered name ("" when none): Restore registers it
	// again, and fails (ErrNameTaken) while a live process holds it.
	Name string `json:"name,omitempty"`
	// Image is the name its Main is registered under (Kernel.RegisterImage).
	Image string `json:"image"`
	// Grants are its token's grants (none: it held no token).
	Grants []capability.Grant `json:"grants,omitempty"`
	// NotAfter is its token's earliest expiry (zero: none).
	NotAfter time.Time `json:"not_after,omitzero"`
	// UsesLeft is how many checks its token had left when MaxUses limited
	// them (UsesLimited): the restored token allows that many.
	UsesLeft    int  `json:"uses_left,omitempty"`
	UsesLimited bool `json:"uses_limited,omitempty"`
	// Quota is its own account's limits; Used what that account (with its
	// descendants) had spent of each meter, wall_ms being the time it had
	// lived when a wall_ms limit applied: the restored process has the same
	// budget left.
	Quota capability.Limits `json:"quota,omitempty"`
	Used  capability.Limits `json:"used,omitempty"`
	// Budget is what the process could still spend of each meter when
	// the snapshot was taken: the tightest room of its own account and of
	// every ancestor's (capability.Account.Left), so that a child bounded
	// only by its parent's quota stays bounded by it; wall_ms is the time
	// left to its deadline; for the held meters (children, memory_mb) what
	// the process held itself is counted back in (it is given back when the
	// process ends). A meter absent is unlimited. Restore limits the
	// restored account to exactly this much more of each meter.
	Budget capability.Limits `json:"budget,omitempty"`
	// Killed is whether taking it ended the process (SnapshotOptions.Kill):
	// only such a snapshot restores without a fork (the process of another
	// may still run, and has spent since).
	Killed bool `json:"killed,omitempty"`
	// Mailbox holds the messages that were waiting, oldest first.
	Mailbox []SnapshotMessage `json:"mailbox,omitempty"`
	// State is what the process exposed with SetState (nil: nothing).
	State json.RawMessage `json:"state,omitempty"`

	raw []byte // the sealed bytes (the JSON above), set by seal and DecodeSnapshot
	mac []byte
}

// SnapshotMessage is one waiting message of a snapshot. Kind is "json"
// (any body: it comes back as a json.RawMessage), "term" (a *Term) or
// "down" (a *Down, whose PIDs are the snapshot's kernel's).
type SnapshotMessage struct {
	From PID             `json:"from,omitempty"`
	Kind string          `json:"kind"`
	Body json.RawMessage `json:"body,omitempty"`
}

// snapshotEnvelope is a snapshot's stored form: the exact bytes sealed,
// and the seal.
type snapshotEnvelope struct {
	Snapshot json.RawMessage `json:"snapshot"`
	MAC      []byte          `json:"mac"`
}

// Encode returns the sealed snapshot as stored: decode it with
// DecodeSnapshot, restore it with Kernel.Restore.
func (s *Snapshot) Encode() []byte {
	b, _ := json.Marshal(snapshotEnvelope{Snapshot: s.raw, MAC: s.mac})
	return b
}

// DecodeSnapshot reads what Encode wrote. It does not verify the seal:
// Restore does, with the restoring kernel's authority.
func DecodeSnapshot(b []byte) (*Snapshot, error) {
	var env snapshotEnvelope
	if err := json.Unmarshal(b, &env); err != nil || len(env.Snapshot) == 0 {
		return nil, fmt.Errorf("%w: this is not a process snapshot (agentos snapshot writes them)", ErrInvalid)
	}
	var s Snapshot
	if err := json.Unmarshal(env.Snapshot, &s); err != nil {
		return nil, fmt.Errorf("%w: the snapshot does not decode: %v", ErrInvalid, err)
	}
	s.raw, s.mac = env.Snapshot, env.MAC
	return &s, nil
}

// Key identifies the sealed snapshot: the hex SHA-256 of its sealed bytes
// ("" for a snapshot that is not sealed). Restore records it as consumed.
func (s *Snapshot) Key() string {
	if len(s.raw) == 0 {
		return ""
	}
	sum := sha256.Sum256(s.raw)
	return hex.EncodeToString(sum[:])
}

// SnapshotStore keeps sealed snapshots (Snapshot.Encode) under an id, and
// which of them were restored. The runtime's keeps them in the journal
// (JournalSnapshots).
type SnapshotStore interface {
	// SaveSnapshot stores s and returns its id.
	SaveSnapshot(ctx context.Context, s *Snapshot) (string, error)
	// LoadSnapshot returns the snapshot stored as id (a unique prefix of
	// an id MAY be accepted).
	LoadSnapshot(ctx context.Context, id string) (*Snapshot, error)
	// SnapshotRestored reports whether the snapshot key (Snapshot.Key)
	// was restored already (ConsumeSnapshot), and as what.
	SnapshotRestored(ctx context.Context, key string) (what string, restored bool, err error)
	// ConsumeSnapshot records that the snapshot key was restored as what
	// (a process, for the record). IMPORTANT: it MUST be durable when it
	// returns nil, and MUST fail with ErrNotRestorable when key was
	// consumed already, atomically: of two concurrent calls for one key,
	// at most one succeeds.
	ConsumeSnapshot(ctx context.Context, key, what string) error
}

// SnapshotOptions configure Kernel.Snapshot.
type SnapshotOptions struct {
	// Kill ends the process (reason killed) in the same step as the
	// capture, so that no message reaches it between the two: a migration.
	// Without it the process runs on, and the messages it receives from
	// then on are not in the snapshot.
	Kill bool
	// By names who asked (the killed process's exit detail).
	By string
}

// SetState sets the state the process exposes to snapshots (nil clears
// it): a JSON document from which its image can go on after a Restore. It
// fails with ErrInvalid when state is not JSON.
func (p *Process) SetState(state json.RawMessage) error {
	if state != nil && !json.Valid(state) {
		return fmt.Errorf("%w: process %v: the state to expose to snapshots is not JSON", ErrInvalid, p.pid)
	}
	p.mu.Lock()
	p.state = append(json.RawMessage(nil), state...)
	if state == nil {
		p.state = nil
	}
	p.mu.Unlock()
	return nil
}

// State returns the state the process exposes (SetState); a restored
// process starts with its snapshot's.
func (p *Process) State() json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append(json.RawMessage(nil), p.state...)
}

// Restored reports whether the process was started by Restore.
func (p *Process) Restored() bool { return p.restored }

// Snapshot captures process pid (see Snapshot) and seals it with the
// kernel's authority; with Options.Snapshots set it is also stored, and
// the id returned (when storing fails after opts.Kill ended the process,
// the process is restored at once, and the error says as which pid). The mailbox is copied, not drained, unless opts.Kill
// ends the process. A message body that cannot be written as JSON (a
// channel, a function) fails the snapshot, naming it.
func (k *Kernel) Snapshot(ctx context.Context, pid PID, opts SnapshotOptions) (*Snapshot, string, error) {
	p := k.lookupPID(pid)
	if p == nil {
		return nil, "", fmt.Errorf("%w: snapshot of %v: the process is not alive (agentos ps lists the live processes)", ErrNoProcess, pid)
	}
	if p.image == "" {
		return nil, "", fmt.Errorf("%w: snapshot of %v: the process was spawned without an image name, so nothing could restore it: spawn it with SpawnOptions.Image naming a Main registered with Kernel.RegisterImage", ErrInvalid, pid)
	}
	now := k.now()
	s := &Snapshot{Version: SnapshotVersion, Taken: now, PID: pid, Image: p.image, Quota: p.acct.Limits(), Killed: opts.Kill}
	var box []Message
	var captured bool
	capture := func() { // under p.mu
		captured = true
		box = k.capture(s, p, now)
	}
	if opts.Kill {
		k.emit(&Event{Kind: EventSignal, PID: pid, Detail: "kill"})
		k.exitCapture(p, Reason{Kind: Killed, Detail: orDefault(opts.By, "snapshot")}, capture)
	} else {
		p.mu.Lock()
		if !p.dead {
			capture()
		}
		p.mu.Unlock()
	}
	if !captured {
		return nil, "", fmt.Errorf("%w: snapshot of %v: the process ended before it was captured", ErrNoProcess, pid)
	}
	for i, m := range box {
		sm, err := snapshotMessage(m)
		if err != nil {
			return nil, "", fmt.Errorf("%w: snapshot of %v: message %d of its mailbox (%T): %v; send processes JSON-encodable bodies to snapshot them", ErrInvalid, pid, i+1, m.Body, err)
		}
		s.Mailbox = append(s.Mailbox, sm)
	}
	if err := k.seal(s); err != nil {
		return nil, "", err
	}
	id, err := k.store(ctx, s, opts.Kill)
	if err != nil {
		return s, "", err
	}
	k.emit(&Event{Kind: EventSnapshot, PID: pid, Name: s.Name, Detail: id})
	return s, id, nil
}

// capture fills in s what p holds (its name, state, token and usage, and
// its budget) and returns a copy of its mailbox. p.mu is held.
func (k *Kernel) capture(s *Snapshot, p *Process, now time.Time) []Message {
	s.Name = p.name
	box := append([]Message(nil), p.box[p.head:]...)
	s.State = append(json.RawMessage(nil), p.state...)
	if p.token != nil {
		t := p.token.Token()
		s.Grants = t.Grants
		s.NotAfter, s.UsesLeft, s.UsesLimited = k.auth.TokenLimits(t)
	}
	s.Used = used(p, s.Quota, now)
	s.Budget = k.budget(p, now)
	return box
}

// used is what p has spent of each meter (nil: nothing), holdings aside
// (Children, MemoryMB: given back when the process ends); its wall time
// when it has a wall quota or deadline. p.mu is held.
func used(p *Process, quota capability.Limits, now time.Time) capability.Limits {
	var u capability.Limits
	set := func(m capability.Meter, v float64) {
		if u == nil {
			u = capability.Limits{}
		}
		u[m] = v
	}
	for _, m := range Meters {
		if m == capability.Children || m == capability.MemoryMB {
			continue
		}
		if v := p.acct.Used(m); v != 0 {
			set(m, v)
		}
	}
	if _, ok := quota[capability.WallMS]; ok || !p.wallDeadline.IsZero() {
		set(capability.WallMS, float64(now.Sub(p.started).Milliseconds()))
	}
	return u
}

// store keeps the sealed snapshot s in Options.Snapshots (when set) and
// returns its id. When storing fails after kill ended the process, the
// process is given back (restored at once) rather than lost, and the
// error says as which pid.
func (k *Kernel) store(ctx context.Context, s *Snapshot, kill bool) (string, error) {
	if k.opts.Snapshots == nil {
		return "", nil
	}
	id, err := k.opts.Snapshots.SaveSnapshot(ctx, s)
	if err == nil {
		return id, nil
	}
	if kill {
		if q, rerr := k.restore(s, RestoreOptions{}, false); rerr == nil {
			return "", fmt.Errorf("snapshot of %v: storing it: %w (the process was restored as %v)", s.PID, err, q.PID())
		}
	}
	return "", fmt.Errorf("snapshot of %v: storing it: %w", s.PID, err)
}

// budget is what p may still spend of each meter (Snapshot.Budget). p.mu
// is held; the accounts have their own lock.
func (k *Kernel) budget(p *Process, now time.Time) capability.Limits {
	var b capability.Limits
	set := func(m capability.Meter, v float64) {
		if b == nil {
			b = capability.Limits{}
		}
		b[m] = max(0, v)
	}
	for _, m := range Meters {
		switch m {
		case capability.WallMS:
			if !p.wallDeadline.IsZero() {
				set(m, float64(p.wallDeadline.Sub(now).Milliseconds()))
			}
		case capability.Children, capability.MemoryMB:
			if left, ok := p.acct.Left(m); ok {
				set(m, left+p.acct.Used(m))
			}
		default:
			if left, ok := p.acct.Left(m); ok {
				set(m, left)
			}
		}
	}
	return b
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (k *Kernel) seal(s *Snapshot) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("%w: snapshot of %v: %v", ErrInvalid, s.PID, err)
	}
	s.raw, s.mac = raw, k.auth.Seal(sealPurpose, raw)
	return nil
}

func snapshotMessage(m Message) (SnapshotMessage, error) {
	sm := SnapshotMessage{From: m.From, Kind: "json"}
	var err error
	switch b := m.Body.(type) {
	case *Term:
		sm.Kind = "term"
	case *Down:
		sm.Kind = "down"
		sm.Body, err = json.Marshal(b)
	case json.RawMessage:
		if !json.Valid(b) {
			return sm, errors.New("the body is not JSON")
		}
		sm.Body = append(json.RawMessage(nil), b...)
	default:
		sm.Body, err = json.Marshal(b)
	}
	return sm, err
}

func (sm SnapshotMessage) message() (Message, error) {
	switch sm.Kind {
	case "term":
		return Message{From: sm.From, Body: &Term{From: sm.From}}, nil
	case "down":
		var d Down
		if err := json.Unmarshal(sm.Body, &d); err != nil {
			return Message{}, err
		}
		return Message{From: sm.From, Body: &d}, nil
	case "json":
		return Message{From: sm.From, Body: append(json.RawMessage(nil), sm.Body...)}, nil
	default:
		return Message{}, fmt.Errorf("unknown message kind %q", sm.Kind)
	}
}

// LoadSnapshot returns the snapshot stored as id (Options.Snapshots).
func (k *Kernel) LoadSnapshot(ctx context.Context, id string) (*Snapshot, error) {
	if k.opts.Snapshots == nil {
		return nil, fmt.Errorf("%w: this kernel keeps no snapshots (kernel.Options.Snapshots is unset)", ErrInvalid)
	}
	return k.opts.Snapshots.LoadSnapshot(ctx, id)
}

// RestoreOptions configure Kernel.Restore. The zero value restores the
// snapshot as it was: its name, its registered image, once.
type RestoreOptions struct {
	// Main runs the restored process (nil: the Main registered as the
	// snapshot's image).
	Main Main
	// Name registers the restored process under another name than the
	// snapshot's.
	Name string
	// Fork starts a copy: the snapshot is restored even when it was
	// restored before or its original may still run, and it is not
	// consumed. IMPORTANT: a fork duplicates the process's rights and
	// remaining budget (each copy may spend all of it): it is the node
	// operator's decision (agentos restore --fork, the admin socket, the
	// kernel actor, this Go API). No kernel tool and no Process method
	// restores, so a process can never fork itself or another.
	Fork bool
}

// Restore starts s again as a new process of this kernel: its image, its
// name, a token minted by this kernel's authority with exactly the
// snapshot's grants, earliest expiry and uses left (never more), an account
// limited to exactly the budget the snapshot had left (Snapshot.Budget: the
// tightest of its own quota and every ancestor's, so a child bounded by its
// parent's quota keeps that bound), its mailbox refilled in order and its
// exposed state (Process.State).
//
// IMPORTANT: a snapshot restores once. Restore consumes it, recorded in the
// kernel's SnapshotStore (durably: the journal, seen by every node sharing
// it) and in memory; a second restore of it fails with ErrNotRestorable.
// A snapshot taken without SnapshotOptions.Kill does not restore (it fails
// with ErrNotRestorable): its process ran on, may still run, and spent
// since, so giving back the budget it had then would amplify it.
// RestoreOptions.Fork lifts both rules and consumes nothing.
//
// It fails with capability.ErrInvalid when the seal does not verify (an
// edited snapshot, or another key), capability.ErrExpired when its token
// has expired since, ErrNameTaken while a live process holds its name
// (kill the original first, or restore under another name), ErrInvalid for
// an unknown image or version. The restored process is the kernel's child
// (its old parent, links and monitors are not restored); a token whose uses
// were all spent is restored as no token.
func (k *Kernel) Restore(s *Snapshot, opts RestoreOptions) (*Process, error) {
	return k.restore(s, opts, true)
}

// restore is Restore; durable false consumes the snapshot in memory only
// (Snapshot gives back a process whose snapshot could not be stored).
func (k *Kernel) restore(s *Snapshot, opts RestoreOptions, durable bool) (*Process, error) {
	v, err := k.unseal(s)
	if err != nil {
		return nil, err
	}
	main := opts.Main
	if main == nil {
		if main, err = k.image(v.Image); err != nil {
			return nil, fmt.Errorf("restore of the snapshot of %v: %w", v.PID, err)
		}
	}
	so, err := restoreSpawnOptions(&v, opts)
	if err != nil {
		return nil, err
	}

	key := s.Key()
	if !opts.Fork {
		// Check, spawn and consume are one step on this kernel.
		k.restoreMu.Lock()
		defer k.restoreMu.Unlock()
		if err := k.restorable(&v, key); err != nil {
			return nil, err
		}
	}
	p, err := k.spawn(nil, main, so)
	if errors.Is(err, ErrNameTaken) {
		return nil, fmt.Errorf("restore of the snapshot of %v: %w: end that process first (agentos kill), or restore under another name (agentos restore --name, RestoreOptions.Name)", v.PID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("restore of the snapshot of %v: %w", v.PID, err)
	}
	if !opts.Fork {
		if err := k.consume(p, &v, key, so.Name, durable); err != nil {
			return nil, err
		}
	}
	detail := fmt.Sprintf("from %v of %s", v.PID, v.Taken.Format(time.RFC3339))
	if opts.Fork {
		detail += " (fork)"
	}
	k.emit(&Event{Kind: EventRestore, PID: p.pid, Name: so.Name, Detail: detail})
	return p, nil
}

// unseal verifies s's seal and returns the snapshot its sealed bytes hold
// (only those count: the fields are read again from them), refusing one of
// another version or whose token has expired.
func (k *Kernel) unseal(s *Snapshot) (Snapshot, error) {
	var v Snapshot
	if s == nil || len(s.raw) == 0 {
		return v, fmt.Errorf("%w: restore needs a sealed snapshot (Kernel.Snapshot or DecodeSnapshot)", ErrInvalid)
	}
	if err := k.auth.Unseal(sealPurpose, s.raw, s.mac); err != nil {
		return v, fmt.Errorf("%w: restore of the snapshot of %v: %w", ErrInvalid, s.PID, err)
	}
	if err := json.Unmarshal(s.raw, &v); err != nil {
		return v, fmt.Errorf("%w: restore: the snapshot does not decode: %v", ErrInvalid, err)
	}
	if v.Version != SnapshotVersion {
		return v, fmt.Errorf("%w: restore: the snapshot is of version %d, this kernel restores version %d", ErrInvalid, v.Version, SnapshotVersion)
	}
	if !v.NotAfter.IsZero() && k.auth.Now().After(v.NotAfter) {
		return v, fmt.Errorf("%w: restore of the snapshot of %v: %w: its token expired at %s; spawn the process anew with fresh grants", ErrInvalid, v.PID, capability.ErrExpired, v.NotAfter.Format(time.RFC3339))
	}
	return v, nil
}

// restoreSpawnOptions are the options that spawn v's process again: its
// name (or opts.Name), image, quota and grants, its token's caveats (a
// token whose uses were all spent is restored as no token), and what it
// carries over: its usage, its mailbox and its state.
func restoreSpawnOptions(v *Snapshot, opts RestoreOptions) (SpawnOptions, error) {
	box := make([]Message, 0, len(v.Mailbox))
	for i, sm := range v.Mailbox {
		m, err := sm.message()
		if err != nil {
			return SpawnOptions{}, fmt.Errorf("%w: restore: message %d of the snapshot's mailbox: %v", ErrInvalid, i+1, err)
		}
		box = append(box, m)
	}
	so := SpawnOptions{Name: v.Name, Image: v.Image, Quota: restoredQuota(*v), Grants: v.Grants}
	if opts.Name != "" {
		so.Name = opts.Name
	}
	so.Caveats.NotAfter = v.NotAfter
	if v.UsesLimited {
		so.Caveats.MaxUses = v.UsesLeft
		if v.UsesLeft <= 0 {
			so.Grants = nil // used up: no right left
		}
	}
	so.restore = &restoreState{used: v.Used, box: box, state: v.State}
	return so, nil
}

// consume records that the snapshot key was restored as p (named name):
// on this kernel, and when durable in Options.Snapshots too. A record that
// fails (another node sharing the journal restored it meanwhile) kills p:
// the copy does not run on. k.restoreMu is held.
func (k *Kernel) consume(p *Process, v *Snapshot, key, name string, durable bool) error {
	k.restoredMu.Lock()
	if k.restored == nil {
		k.restored = map[string]bool{}
	}
	k.restored[key] = true
	k.restoredMu.Unlock()
	if !durable || k.opts.Snapshots == nil {
		return nil
	}
	if err := k.opts.Snapshots.ConsumeSnapshot(context.Background(), key, fmt.Sprintf("pid %v (%s)", p.pid, name)); err != nil {
		k.exit(p, Reason{Kind: Killed, Detail: "restore not recorded"})
		return fmt.Errorf("restore of the snapshot of %v: recording that it was restored: %w (the process started as %v was killed)", v.PID, err, p.pid)
	}
	return nil
}

// restorable refuses a snapshot restored already, or whose process may
// still run (Restore without Fork). k.restoreMu is held.
func (k *Kernel) restorable(v *Snapshot, key string) error {
	k.restoredMu.Lock()
	done := k.restored[key]
	k.restoredMu.Unlock()
	what := ""
	if !done && k.opts.Snapshots != nil {
		var err error
		if what, done, err = k.opts.Snapshots.SnapshotRestored(context.Background(), key); err != nil {
			return fmt.Errorf("restore of the snapshot of %v: reading whether it was restored: %w", v.PID, err)
		}
	}
	if done {
		if what != "" {
			what = " as " + what
		}
		return fmt.Errorf("%w: restored already%s; a snapshot restores once: --fork (RestoreOptions.Fork) runs a copy that duplicates its budget", ErrNotRestorable, what)
	}
	if !v.Killed {
		return fmt.Errorf("%w: taken without --kill, so process %v ran on after it (it may still run) and may have spent since: snapshot with --kill to move a process, or --fork (RestoreOptions.Fork) runs a copy that duplicates its budget", ErrNotRestorable, v.PID)
	}
	return nil
}

// restoredQuota is the restored account's limits: its own quota, each
// meter of the budget tightened to what was spent plus what was left.
func restoredQuota(v Snapshot) capability.Limits {
	q := capability.Limits{}
	for m, l := range v.Quota {
		q[m] = l
	}
	for m, b := range v.Budget {
		if own, ok := q[m]; !ok || v.Used[m]+b < own {
			q[m] = v.Used[m] + b
		}
	}
	if len(q) == 0 {
		return nil
	}
	return q
}

// restoreState is what spawn carries over from a snapshot.
type restoreState struct {
	used  capability.Limits
	box   []Message
	state json.RawMessage
}
