package approval

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// State is where a version's request stands.
type State string

// The states of a Request.
const (
	StatePending  State = "pending"
	StateApproved State = "approved"
	StateDenied   State = "denied"
)

// Request is the approval of one version of one tool (Path, Hash): asked,
// then decided. It is what `agentos approvals --json` prints.
type Request struct {
	// ID names the request ("a-" and 12 hex digits): `agentos approve ID`.
	ID string `json:"id"`
	// Path is the tool, relative to the tool root.
	Path string `json:"path"`
	// Hash is the version's approval key: the SHA-256 of the tool's source
	// (transpile.Hash) when it requires no module of the tool tree, else the
	// SHA-256 of that hash and the sorted Modules (node.Judge): a changed
	// module is a new version.
	Hash string `json:"hash"`
	// Source is the entry's content hash when it differs from Hash (the
	// tool requires modules); the version's modules, as path@hash, are
	// Modules.
	Source  string   `json:"source,omitempty"`
	Modules []string `json:"modules,omitempty"`
	// Risk is check_tool's risk of the version, and Reasons why.
	Risk    string   `json:"risk"`
	Reasons []string `json:"reasons,omitempty"`
	// State is pending, approved or denied.
	State State `json:"state"`
	// RequestedBy is who first asked to run it (the process's token holder,
	// or "go-api"); Requested is when.
	RequestedBy string    `json:"requested_by,omitempty"`
	Requested   time.Time `json:"requested"`
	// DecidedBy is who approved or denied it (the CLI's user as "cli:NAME",
	// the token holder of an MCP client as "mcp:NAME", or "go-api" unless
	// the program names someone); Reason is theirs; Decided is when.
	DecidedBy string    `json:"decided_by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Decided   time.Time `json:"decided,omitzero"`
	// Waiting is how many runs wait on it in the answering node now (not
	// stored).
	Waiting int `json:"waiting,omitempty"`
}

// Event is one step in the file's log: a request made, approved or denied.
type Event struct {
	At     time.Time `json:"at"`
	ID     string    `json:"id"`
	Path   string    `json:"path"`
	Hash   string    `json:"hash"`
	Event  string    `json:"event"` // "requested", "approved" or "denied"
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// Ask is a version asking to run: what Await and Store.Ask are given.
type Ask struct {
	Path string
	// Hash is the version's approval key (Request.Hash).
	Hash string
	// Source is the entry's content hash ("" or Hash: the same); Modules
	// are the modules the version requires, as path@hash.
	Source  string
	Modules []string
	Risk    string
	Reasons []string
	// By is who asks (the caller's token holder).
	By string
}

// source is a's Source as a Request keeps it: "" when it is Hash.
func (a Ask) source() string {
	if a.Source == a.Hash {
		return ""
	}
	return a.Source
}

// ErrBusy: another process holds the approvals file (a node serving the
// tool root): ask the node, through its admin socket.
var ErrBusy = errors.New("approval: the approvals file is held by another process")

// ErrNotFound: no request matches the target given to Approve or Deny.
var ErrNotFound = errors.New("approval: no such approval request")

// ErrAmbiguous: the target matches more than one request.
var ErrAmbiguous = errors.New("approval: the target matches more than one request")

var (
	bucketRequests = []byte("requests") // id -> Request
	bucketVersions = []byte("versions") // path NUL hash -> id
	bucketLog      = []byte("log")      // seq (8 bytes, big endian) -> Event
)

// Store is the approvals file: every request and decision, one fsynced
// transaction each. The file is opened for each operation and closed
// after it, so that several processes on one tool root (a node, a
// one-shot 'agentos call', 'agentos approve') share it, each waiting its
// turn (bbolt's lock). It is safe for concurrent use.
type Store struct {
	path string
	wait time.Duration
	mu   sync.Mutex // one open at a time in this process (flock is per open)
	now  func() time.Time
}

// OpenStore returns the store of the approvals file at path, created (mode
// 0600) at its first write: a root where nothing needed an approval costs
// no file and no fsync at start. Each operation waits up to wait for
// another process holding the file, then fails with ErrBusy. Its
// directory MUST exist (a write fails saying so otherwise).
func OpenStore(path string, wait time.Duration) (*Store, error) {
	return &Store{path: path, wait: wait, now: time.Now}, nil
}

// Path returns the file.
func (s *Store) Path() string { return s.path }

// Close releases the store (the file is closed after each operation).
func (s *Store) Close() error { return nil }

func (s *Store) open() (*bolt.DB, error) {
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{Timeout: s.wait})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s stayed locked by another agentos process for %v; try again", ErrBusy, s.path, s.wait)
		}
		return nil, fmt.Errorf("approval: opening %s: %w", s.path, err)
	}
	return db, nil
}

func (s *Store) update(fn func(*bolt.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, err := s.open()
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketRequests, bucketVersions, bucketLog} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return fn(tx)
	})
	return errors.Join(err, db.Close())
}

func (s *Store) view(fn func(*bolt.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, err := s.open()
	if err != nil {
		return err
	}
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketRequests) == nil {
			return nil // nothing written yet: no request
		}
		return fn(tx)
	})
	return errors.Join(err, db.Close())
}

func versionKey(path, hash string) []byte { return []byte(path + "\x00" + hash) }

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "a-" + hex.EncodeToString(b[:])
}

func getRequest(tx *bolt.Tx, id string) (Request, bool, error) {
	v := tx.Bucket(bucketRequests).Get([]byte(id))
	if v == nil {
		return Request{}, false, nil
	}
	var r Request
	if err := json.Unmarshal(v, &r); err != nil {
		return Request{}, false, fmt.Errorf("approval: the record of %s is corrupt: %w", id, err)
	}
	return r, true, nil
}

func putRequest(tx *bolt.Tx, r Request, ev Event) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketRequests).Put([]byte(r.ID), b); err != nil {
		return err
	}
	if err := tx.Bucket(bucketVersions).Put(versionKey(r.Path, r.Hash), []byte(r.ID)); err != nil {
		return err
	}
	lb := tx.Bucket(bucketLog)
	seq, err := lb.NextSequence()
	if err != nil {
		return err
	}
	ev.ID, ev.Path, ev.Hash = r.ID, r.Path, r.Hash
	eb, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return lb.Put(k[:], eb)
}

func versionRequest(tx *bolt.Tx, path, hash string) (Request, bool, error) {
	id := tx.Bucket(bucketVersions).Get(versionKey(path, hash))
	if id == nil {
		return Request{}, false, nil
	}
	return getRequest(tx, string(id))
}

// Lookup returns the request of the version (path, hash), if any.
func (s *Store) Lookup(path, hash string) (r Request, ok bool, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		r, ok, err = versionRequest(tx, path, hash)
		return err
	})
	return r, ok, err
}

// Get returns the request id.
func (s *Store) Get(id string) (r Request, ok bool, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		r, ok, err = getRequest(tx, id)
		return err
	})
	return r, ok, err
}

// Ask returns the request of a's version, making a pending one (durably,
// before it returns) when the version has none; created says it did.
func (s *Store) Ask(a Ask) (r Request, created bool, err error) {
	if a.Path == "" || a.Hash == "" {
		return Request{}, false, errors.New("approval: a request needs the tool's path and content hash")
	}
	err = s.update(func(tx *bolt.Tx) error {
		var ok bool
		if r, ok, err = versionRequest(tx, a.Path, a.Hash); err != nil || ok {
			return err
		}
		created = true
		r = Request{ID: newID(), Path: a.Path, Hash: a.Hash, Source: a.source(), Modules: a.Modules, Risk: a.Risk, Reasons: a.Reasons, State: StatePending, RequestedBy: a.By, Requested: s.now().UTC()}
		return putRequest(tx, r, Event{At: r.Requested, Event: "requested", By: a.By})
	})
	return r, created, err
}

// Decide approves (approve true) or denies the request id, as by with
// reason, durably. A decided request may be decided again (an approval
// overrides a denial and the reverse); the log keeps both.
func (s *Store) Decide(id string, approve bool, by, reason string) (r Request, err error) {
	err = s.update(func(tx *bolt.Tx) error {
		var ok bool
		if r, ok, err = getRequest(tx, id); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s; list them with 'agentos approvals'", ErrNotFound, id)
		}
		r = decided(r, approve, by, reason, s.now())
		return putRequest(tx, r, Event{At: r.Decided, Event: string(r.State), By: by, Reason: reason})
	})
	return r, err
}

// DecideVersion approves or denies the version a names whether or not it
// was asked for (an approval given before the first run).
func (s *Store) DecideVersion(a Ask, approve bool, by, reason string) (r Request, err error) {
	if a.Path == "" || a.Hash == "" {
		return Request{}, errors.New("approval: a decision needs the tool's path and content hash")
	}
	err = s.update(func(tx *bolt.Tx) error {
		var ok bool
		if r, ok, err = versionRequest(tx, a.Path, a.Hash); err != nil {
			return err
		}
		now := s.now().UTC()
		if !ok {
			r = Request{ID: newID(), Path: a.Path, Hash: a.Hash, Source: a.source(), Modules: a.Modules, Risk: a.Risk, Reasons: a.Reasons, RequestedBy: by, Requested: now}
		}
		r = decided(r, approve, by, reason, now)
		return putRequest(tx, r, Event{At: r.Decided, Event: string(r.State), By: by, Reason: reason})
	})
	return r, err
}

func decided(r Request, approve bool, by, reason string, now time.Time) Request {
	r.State = StateDenied
	if approve {
		r.State = StateApproved
	}
	r.DecidedBy, r.Reason, r.Decided = by, reason, now.UTC()
	return r
}

// List returns the requests in state (every state when empty), oldest
// first.
func (s *Store) List(state State) ([]Request, error) {
	var out []Request
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRequests).ForEach(func(k, v []byte) error {
			var r Request
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("approval: the record of %s is corrupt: %w", k, err)
			}
			if state == "" || r.State == state {
				out = append(out, r)
			}
			return nil
		})
	})
	slices.SortStableFunc(out, func(a, b Request) int { return a.Requested.Compare(b.Requested) })
	return out, err
}

// Log returns the file's log of events, oldest first.
func (s *Store) Log() ([]Event, error) {
	var out []Event
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLog).ForEach(func(_, v []byte) error {
			var e Event
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	return out, err
}

// MinVersionPrefix is the fewest hex digits of a version's hash that
// target path@<hash> (Resolve) may give.
const MinVersionPrefix = 8

// Resolve finds the request target names: a request id (or a unique
// prefix of one, at least "a-" and 4 digits); a tool path with a version,
// tools/x.ts@<hash prefix> (at least MinVersionPrefix digits of the
// request's hash or of its entry's content hash, Request.Source), which
// names that version's request whatever its state; or a tool path, which
// names its pending request. IMPORTANT: a path with more than one version
// pending is refused (ErrAmbiguous, listing them): approving "the newest"
// could approve a version nobody reviewed; name one by id or
// path@<hash>. A path (or path@hash) with no such request returns ok
// false and no error: the caller may judge and decide that version
// (DecideVersion).
func (s *Store) Resolve(target string) (r Request, ok bool, err error) {
	if strings.HasPrefix(target, "a-") && !strings.ContainsAny(target, "/.") {
		return s.resolveID(target)
	}
	if p, v, ok := SplitTarget(target); ok {
		return s.resolveVersion(target, p, v)
	}
	return s.resolvePending(target)
}

// resolveID finds the one request whose id starts with prefix.
func (s *Store) resolveID(prefix string) (Request, bool, error) {
	if len(prefix) < len("a-")+4 {
		return Request{}, false, fmt.Errorf("%w: %q is too short a prefix of a request id; give at least 4 digits", ErrNotFound, prefix)
	}
	var found []Request
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRequests).Cursor()
		for k, v := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
			var r Request
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			found = append(found, r)
		}
		return nil
	})
	switch {
	case err != nil:
		return Request{}, false, err
	case len(found) == 0:
		return Request{}, false, fmt.Errorf("%w: %s; list them with 'agentos approvals'", ErrNotFound, prefix)
	case len(found) > 1:
		return Request{}, false, fmt.Errorf("%w: %s matches %d requests; give more of its id", ErrAmbiguous, prefix, len(found))
	}
	return found[0], true, nil
}

// resolveVersion finds the request, in any state, of version v (a prefix
// of its hash or of its entry's content hash) of the tool at path p.
func (s *Store) resolveVersion(target, p, v string) (Request, bool, error) {
	if len(v) < MinVersionPrefix {
		return Request{}, false, fmt.Errorf("%w: %s: give at least %d hex digits of the version's hash", ErrNotFound, target, MinVersionPrefix)
	}
	all, err := s.List("")
	if err != nil {
		return Request{}, false, err
	}
	var found []Request
	for _, r := range all {
		if r.Path == p && (strings.HasPrefix(r.Hash, v) || r.Source != "" && strings.HasPrefix(r.Source, v)) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return Request{}, false, nil
	case 1:
		return found[0], true, nil
	}
	return Request{}, false, fmt.Errorf("%w: %s matches %d versions (%s); give more of the hash, or the request id", ErrAmbiguous, target, len(found), listed(found))
}

// resolvePending finds the pending request of the tool at path, refusing
// a path with more than one version pending (see Resolve).
func (s *Store) resolvePending(path string) (Request, bool, error) {
	pending, err := s.List(StatePending)
	if err != nil {
		return Request{}, false, err
	}
	var found []Request
	for _, r := range pending {
		if r.Path == path {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return Request{}, false, nil
	case 1:
		return found[0], true, nil
	}
	return Request{}, false, fmt.Errorf("%w: %s has %d versions pending (%s); decide one by its request id or as %s@<hash>, after reviewing that version", ErrAmbiguous, path, len(found), listed(found), path)
}

// SplitTarget splits tools/x.ts@<hex> into the path and the lower-case
// hex; ok is false for any other target.
func SplitTarget(target string) (path, version string, ok bool) {
	i := strings.LastIndexByte(target, '@')
	if i <= 0 || i == len(target)-1 {
		return target, "", false
	}
	v := target[i+1:]
	for _, c := range v {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return target, "", false
		}
	}
	return target[:i], strings.ToLower(v), true
}

// listed names requests as "id (version hash)".
func listed(rs []Request) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s (version %s)", r.ID, short(r.Hash))
	}
	return strings.Join(out, ", ")
}
