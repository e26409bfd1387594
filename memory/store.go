package memory

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	bolt "go.etcd.io/bbolt"

	"github.com/agentos-run/agentos/internal/toolmeta"
)

// Kind is what an item is.
type Kind string

// The kinds of items.
const (
	Fact       Kind = "fact"       // something true about the world or the task
	Lesson     Kind = "lesson"     // a reusable tactic or gotcha (the distiller's output)
	Preference Kind = "preference" // how a user or operator wants things done
	Page       Kind = "page"       // turns of a conversation paged out of the model's window
)

// Kinds lists every kind, in a stable order.
func Kinds() []Kind { return []Kind{Fact, Lesson, Preference, Page} }

// ParseKind returns the kind named s ("" is Fact).
func ParseKind(s string) (Kind, error) {
	if s == "" {
		return Fact, nil
	}
	for _, k := range Kinds() {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("%w: kind %q: use one of fact, lesson, preference, page", ErrInvalid, s)
}

// EphemeralPrefix starts the names of agents whose memory is never written
// to the file (processes spawned without a name).
const EphemeralPrefix = "#"

// FormatVersion is the file layout this package writes (meta/format).
const FormatVersion = 1

// Defaults of Options.
const (
	DefaultMaxItems     = 100000
	DefaultMaxTextBytes = 64 << 10
	DefaultLimit        = 5
	// MaxLimit bounds RecallOptions.Limit.
	MaxLimit = 100
	// MaxNameBytes bounds an agent name.
	MaxNameBytes = 256
	// MaxTags bounds an item's tags.
	MaxTags = 16
)

// Item is one memory.
type Item struct {
	// ID identifies the item within its agent's memory ("1", "2", ...).
	ID    string `json:"id"`
	Agent string `json:"agent"`
	Kind  Kind   `json:"kind"`
	Text  string `json:"text"`
	// Tags are lowercased, deduplicated labels (searched with twice the
	// weight of the text).
	Tags []string `json:"tags,omitempty"`
	// Run is the journal run the item came from (a page's agent run, a
	// lesson's distilled run), "" when none.
	Run     string    `json:"run,omitempty"`
	Created time.Time `json:"created"`
}

// Hit is one recalled item.
type Hit struct {
	Item
	// Score is how much of the query the item covers, 0..1 (the registry's
	// BM25F normalisation).
	Score float64 `json:"score"`
}

// AgentInfo counts one agent's items.
type AgentInfo struct {
	Name   string       `json:"name"`
	Items  int          `json:"items"`
	ByKind map[Kind]int `json:"by_kind"`
}

// Options configure Open. The zero value takes the defaults.
type Options struct {
	// MaxItems bounds the items of one agent (0: DefaultMaxItems). When a
	// Remember would exceed it, the agent's oldest pages are dropped; with
	// no page left it fails with ErrFull.
	MaxItems int
	// MaxTextBytes bounds an item's text (0: DefaultMaxTextBytes).
	MaxTextBytes int
	// NoSync skips the fsync of each transaction (tests, benchmarks): a
	// crash of the machine may then lose the last items.
	NoSync bool
}

// RecallOptions narrow a Recall.
type RecallOptions struct {
	// Limit is how many hits at most (0: DefaultLimit; at most MaxLimit).
	Limit int
	// Kinds are searched (none: every kind).
	Kinds []Kind
	// Run, when set, keeps only the items of that run.
	Run string
}

// Store is the memory of every agent of a tool root. It is safe for
// concurrent use.
type Store struct {
	path string
	opts Options

	mu     sync.Mutex
	db     *bolt.DB
	closed bool
	agents map[string]*agentMem
}

// agentMem is one agent's items, indexed per kind.
type agentMem struct {
	mu    sync.Mutex
	items map[uint64]*Item
	seen  map[Kind]map[string]uint64 // normalised text -> id
	idx   map[Kind]*toolmeta.Index
	pages []uint64 // page ids, oldest first (some may be forgotten)
	next  uint64   // ephemeral agents' next id
}

var (
	bucketMeta   = []byte("meta")
	bucketAgents = []byte("agents")
	keyFormat    = []byte("format")
)

// Open returns the store over the bbolt file at path. The file is opened
// (created, mode 0600) on first use, not here: a runtime whose agents
// remember nothing never touches it.
func Open(path string, opts Options) *Store {
	if opts.MaxItems <= 0 {
		opts.MaxItems = DefaultMaxItems
	}
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = DefaultMaxTextBytes
	}
	return &Store{path: path, opts: opts, agents: map[string]*agentMem{}}
}

// Path returns the store's file.
func (s *Store) Path() string { return s.path }

// Close closes the file (when it was opened). The store is unusable after.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.agents = nil
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// file returns the open database, opening it first. s.mu MUST be held.
func (s *Store) file() (*bolt.DB, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if s.db != nil {
		return s.db, nil
	}
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{Timeout: 2 * time.Second, NoSync: s.opts.NoSync})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s is open in another agentos process (a node serving this tool root?): stop it, or ask the node ('agentos memory' does)", ErrBusy, s.path)
		}
		return nil, fmt.Errorf("memory: opening %s: %w", s.path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keyFormat); v != nil {
			if f, _ := strconv.Atoi(string(v)); f > FormatVersion {
				return fmt.Errorf("%w: %s has format %s, this agentos reads up to %d: upgrade agentos", ErrFormat, s.path, v, FormatVersion)
			}
		} else if err := meta.Put(keyFormat, []byte(strconv.Itoa(FormatVersion))); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(bucketAgents)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: %s: %w", s.path, err)
	}
	s.db = db
	return db, nil
}

// CheckName reports whether name is a valid agent name: 1 to MaxNameBytes
// bytes, no control characters.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: the agent name is empty: memory is kept per agent name (spawn the agent with a name)", ErrInvalid)
	}
	if len(name) > MaxNameBytes {
		return fmt.Errorf("%w: the agent name is %d bytes; at most %d", ErrInvalid, len(name), MaxNameBytes)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: the agent name %q holds a control character", ErrInvalid, name)
	}
	return nil
}

// CheckProcessName refuses a process name that would own an unnamed
// process's memory: one starting with EphemeralPrefix (a process named
// "#7" would read and write unnamed process 7's). "" (unnamed) is valid.
// IMPORTANT: every place that names an agent's process MUST check it.
func CheckProcessName(name string) error {
	if strings.HasPrefix(name, EphemeralPrefix) {
		return fmt.Errorf("%w: the agent name %q starts with %q, reserved for the memories of unnamed agents: choose another name", ErrInvalid, name, EphemeralPrefix)
	}
	return nil
}

func ephemeral(agent string) bool { return strings.HasPrefix(agent, EphemeralPrefix) }

// agent returns agent's memory, loading it from the file on first use.
func (s *Store) agent(agent string) (*agentMem, error) {
	if err := CheckName(agent); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if m := s.agents[agent]; m != nil {
		return m, nil
	}
	m := &agentMem{items: map[uint64]*Item{}, seen: map[Kind]map[string]uint64{}, idx: map[Kind]*toolmeta.Index{}}
	if !ephemeral(agent) {
		db, err := s.file()
		if err != nil {
			return nil, err
		}
		err = db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketAgents).Bucket([]byte(agent))
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				var it Item
				if err := json.Unmarshal(v, &it); err != nil {
					return fmt.Errorf("memory: %s: item %d of agent %q is corrupt (%v): forget it with 'agentos memory forget %s %d'", s.path, binary.BigEndian.Uint64(k), agent, err, agent, binary.BigEndian.Uint64(k))
				}
				m.add(binary.BigEndian.Uint64(k), &it)
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	s.agents[agent] = m
	return m, nil
}

// add indexes it under id. m.mu MUST be held (or m not yet shared).
func (m *agentMem) add(id uint64, it *Item) {
	m.items[id] = it
	seen := m.seen[it.Kind]
	if seen == nil {
		seen = map[string]uint64{}
		m.seen[it.Kind] = seen
	}
	seen[dupKey(it)] = id
	x := m.idx[it.Kind]
	if x == nil {
		x = toolmeta.NewIndexWithoutPaths() // an id is not a word of the item
		m.idx[it.Kind] = x
	}
	x.Put(toolmeta.Tool{Path: docPath(id), Description: it.Text, Tags: it.Tags})
	if it.Kind == Page {
		m.pages = append(m.pages, id)
	}
	m.next = max(m.next, id)
}

// remove drops id. m.mu MUST be held.
func (m *agentMem) remove(id uint64) {
	it := m.items[id]
	if it == nil {
		return
	}
	delete(m.items, id)
	if seen := m.seen[it.Kind]; seen[dupKey(it)] == id {
		delete(seen, dupKey(it))
	}
	m.idx[it.Kind].Remove(docPath(id))
}

// pathPrefix is the indexed items' path prefix: a path is "m/<id>" (a key
// of the index only: its path field is not searched).
const pathPrefix = "m"

func docPath(id uint64) string { return pathPrefix + "/" + strconv.FormatUint(id, 10) }

func docID(path string) (uint64, bool) {
	id, err := strconv.ParseUint(strings.TrimPrefix(path, pathPrefix+"/"), 10, 64)
	return id, err == nil
}

// norm is text as compared for duplicates: trimmed, spaces collapsed,
// lower case.
func norm(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// dupKey is what makes two items of a kind the same: their normalised
// text, and for pages their run too (a page is a turn of one run: the same
// turn in another run is another page; within a run it is stored once, so
// that a resumed agent paging its turns again gets the same ids).
func dupKey(it *Item) string {
	if it.Kind == Page {
		return it.Run + "\x00" + norm(it.Text)
	}
	return norm(it.Text)
}

// prepare checks and normalises it for agent.
func (s *Store) prepare(agent string, it Item) (Item, error) {
	it.Text = strings.TrimSpace(it.Text)
	if it.Text == "" {
		return it, fmt.Errorf("%w: the text to remember is empty", ErrInvalid)
	}
	if len(it.Text) > s.opts.MaxTextBytes {
		return it, fmt.Errorf("%w: the text is %d bytes, over the limit of %d (memory.max_text_bytes): remember less, in several items", ErrInvalid, len(it.Text), s.opts.MaxTextBytes)
	}
	k, err := ParseKind(string(it.Kind))
	if err != nil {
		return it, err
	}
	it.Kind = k
	if len(it.Tags) > MaxTags {
		return it, fmt.Errorf("%w: %d tags; at most %d", ErrInvalid, len(it.Tags), MaxTags)
	}
	var tags []string
	for _, t := range it.Tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && len(t) <= 64 && !contains(tags, t) {
			tags = append(tags, t)
		}
	}
	it.Tags, it.Agent, it.ID = tags, agent, ""
	if it.Created.IsZero() {
		it.Created = time.Now().UTC()
	}
	return it, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Remember stores it in agent's memory and returns it with its ID. An item
// of the same kind and text (case and spaces ignored) is stored once: then
// the existing item is returned and added is false.
func (s *Store) Remember(agent string, it Item) (stored Item, added bool, err error) {
	out, adds, err := s.RememberAll(agent, []Item{it})
	if err != nil {
		return Item{}, false, err
	}
	return out[0], adds[0], nil
}

// RememberAll stores items in agent's memory in one transaction (all or
// none), each as Remember does.
func (s *Store) RememberAll(agent string, items []Item) ([]Item, []bool, error) {
	m, err := s.agent(agent)
	if err != nil {
		return nil, nil, err
	}
	prepared := make([]Item, len(items))
	for i, it := range items {
		if prepared[i], err = s.prepare(agent, it); err != nil {
			return nil, nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out, added, fresh := m.dedupe(prepared)
	// Room: drop the oldest pages beyond MaxItems.
	over := len(m.items) + len(fresh) - s.opts.MaxItems
	drop := m.oldestPages(over)
	if len(drop) < over {
		m.pages = append(drop, m.pages...) // refused: the pages stay
		return nil, nil, fmt.Errorf("%w: agent %q holds %d items, the limit (memory.max_items): forget some ('agentos memory forget %s ID', or the forget tool) or raise the limit", ErrFull, agent, len(m.items), agent)
	}
	ids := make([]uint64, len(fresh))
	switch {
	case len(fresh) == 0 && len(drop) == 0:
		// Nothing new (every item a duplicate: a resumed agent paging its
		// turns again): no write, no fsync.
	case ephemeral(agent):
		for j := range fresh {
			m.next++
			ids[j] = m.next
		}
	default:
		if err := s.writeItems(agent, prepared, fresh, drop, ids); err != nil {
			// Pages taken off the list stay in memory: put them back.
			m.pages = append(drop, m.pages...)
			return nil, nil, err
		}
	}
	for _, id := range drop {
		m.remove(id)
	}
	for j, i := range fresh {
		it := prepared[i]
		it.ID = strconv.FormatUint(ids[j], 10)
		m.add(ids[j], &it)
		out[i] = it
	}
	for i := range out { // duplicates within the batch: the stored item
		if !added[i] && out[i].ID == "" {
			n := dupKey(&out[i])
			out[i] = *m.items[m.seen[out[i].Kind][n]]
		}
	}
	return out, added, nil
}

// dedupe sorts the prepared items: those already held (out is the held
// item), those repeating an earlier one of the batch (out is that one, not
// stored yet), and the fresh ones to add (their indexes; added is true).
// Called with m.mu held.
func (m *agentMem) dedupe(prepared []Item) (out []Item, added []bool, fresh []int) {
	out = make([]Item, len(prepared))
	added = make([]bool, len(prepared))
	batch := map[Kind]map[string]int{}
	for i, it := range prepared {
		n := dupKey(&it)
		if id, ok := m.seen[it.Kind][n]; ok {
			out[i] = *m.items[id]
			continue
		}
		if j, ok := batch[it.Kind][n]; ok { // the same text twice in one batch
			out[i] = prepared[j]
			continue
		}
		if batch[it.Kind] == nil {
			batch[it.Kind] = map[string]int{}
		}
		batch[it.Kind][n] = i
		fresh = append(fresh, i)
		added[i] = true
	}
	return out, added, fresh
}

// oldestPages takes up to n of the oldest pages still held off the page
// list and returns them (to drop). Called with m.mu held.
func (m *agentMem) oldestPages(n int) []uint64 {
	var drop []uint64
	for len(m.pages) > 0 && len(drop) < n {
		id := m.pages[0]
		m.pages = m.pages[1:]
		if _, ok := m.items[id]; ok {
			drop = append(drop, id)
		}
	}
	return drop
}

// writeItems deletes the items drop and adds the items fresh (indexes into
// prepared) of agent in one transaction of the file, setting ids to the
// new items' IDs.
func (s *Store) writeItems(agent string, prepared []Item, fresh []int, drop, ids []uint64) error {
	s.mu.Lock()
	db, err := s.file()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketAgents).CreateBucketIfNotExists([]byte(agent))
		if err != nil {
			return err
		}
		for _, id := range drop {
			if err := b.Delete(key(id)); err != nil {
				return err
			}
		}
		for j, i := range fresh {
			if ids[j], err = b.NextSequence(); err != nil {
				return err
			}
			it := prepared[i]
			it.ID = strconv.FormatUint(ids[j], 10)
			v, err := json.Marshal(it)
			if err != nil {
				return err
			}
			if err := b.Put(key(ids[j]), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: writing to %s: %w", s.path, err)
	}
	return nil
}

func key(id uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], id)
	return k[:]
}

// Recall returns agent's items that best match query, best first.
func (s *Store) Recall(agent, query string, o RecallOptions) ([]Hit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: the query is empty; say what to recall in words", ErrInvalid)
	}
	o, err := o.normalized()
	if err != nil {
		return nil, err
	}
	m, err := s.agent(agent)
	if err != nil {
		return nil, err
	}
	// A run filter is applied after ranking: ask for more.
	want := o.Limit
	if o.Run != "" {
		want = min(o.Limit*8, 1000)
	}
	var hits []Hit
	for _, k := range o.Kinds {
		hits = append(hits, m.search(k, query, want, o.Run)...)
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Created.After(hits[j].Created) // the newer first
	})
	return hits[:min(len(hits), o.Limit)], nil
}

// normalized checks o and applies its defaults (DefaultLimit, every
// kind).
func (o RecallOptions) normalized() (RecallOptions, error) {
	if o.Limit < 0 || o.Limit > MaxLimit {
		return o, fmt.Errorf("%w: limit %d must be between 1 and %d", ErrInvalid, o.Limit, MaxLimit)
	}
	o.Limit = cmp.Or(o.Limit, DefaultLimit)
	if len(o.Kinds) == 0 {
		o.Kinds = Kinds()
	}
	for _, k := range o.Kinds {
		if _, err := ParseKind(string(k)); err != nil || k == "" {
			return o, fmt.Errorf("%w: kind %q: use one of fact, lesson, preference, page", ErrInvalid, k)
		}
	}
	return o, nil
}

// search returns the want best hits for query among the items of kind k
// (of the run, when run is set: fewer then).
func (m *agentMem) search(k Kind, query string, want int, run string) []Hit {
	m.mu.Lock()
	x := m.idx[k]
	m.mu.Unlock()
	if x == nil {
		return nil
	}
	var hits []Hit
	for _, h := range x.Search(query, want) {
		id, ok := docID(h.Path)
		if !ok {
			continue
		}
		m.mu.Lock()
		it := m.items[id]
		m.mu.Unlock()
		if it == nil || (run != "" && it.Run != run) {
			continue
		}
		hits = append(hits, Hit{Item: it.clone(), Score: h.Score})
	}
	return hits
}

func (it *Item) clone() Item {
	c := *it
	c.Tags = append([]string(nil), it.Tags...)
	if len(c.Tags) == 0 {
		c.Tags = nil
	}
	return c
}

// Get returns one item of agent.
func (s *Store) Get(agent, id string) (Item, error) {
	m, err := s.agent(agent)
	if err != nil {
		return Item{}, err
	}
	n, perr := strconv.ParseUint(id, 10, 64)
	m.mu.Lock()
	defer m.mu.Unlock()
	it := m.items[n]
	if perr != nil || it == nil {
		return Item{}, fmt.Errorf("%w: agent %q has no item %q (list them with 'agentos memory list %s')", ErrNotFound, agent, id, agent)
	}
	return it.clone(), nil
}

// Forget deletes items of agent by id, in one transaction; an id it does
// not hold is ErrNotFound and nothing is deleted.
func (s *Store) Forget(agent string, ids ...string) error {
	m, err := s.agent(agent)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	nums := make([]uint64, len(ids))
	for i, id := range ids {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil || m.items[n] == nil {
			return fmt.Errorf("%w: agent %q has no item %q (list them with 'agentos memory list %s')", ErrNotFound, agent, id, agent)
		}
		nums[i] = n
	}
	if !ephemeral(agent) {
		s.mu.Lock()
		db, err := s.file()
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketAgents).Bucket([]byte(agent))
			if b == nil {
				return nil
			}
			for _, n := range nums {
				if err := b.Delete(key(n)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("memory: writing to %s: %w", s.path, err)
		}
	}
	for _, n := range nums {
		m.remove(n)
	}
	return nil
}

// List returns agent's items of kind ("": every kind), oldest first.
func (s *Store) List(agent string, kind Kind) ([]Item, error) {
	if kind != "" {
		if _, err := ParseKind(string(kind)); err != nil {
			return nil, err
		}
	}
	m, err := s.agent(agent)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]uint64, 0, len(m.items))
	for id, it := range m.items {
		if kind == "" || it.Kind == kind {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]Item, len(ids))
	for i, id := range ids {
		out[i] = m.items[id].clone()
	}
	return out, nil
}

// Agents lists the agents with a memory in the file (and the ephemeral
// ones alive), by name. An agent not loaded yet is counted from the file,
// without building its index.
func (s *Store) Agents() ([]AgentInfo, error) {
	s.mu.Lock()
	loaded := map[string]*agentMem{}
	for n, m := range s.agents {
		loaded[n] = m
	}
	db, err := s.file()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	infos := map[string]*AgentInfo{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAgents).ForEachBucket(func(k []byte) error {
			name := string(k)
			if loaded[name] != nil {
				return nil
			}
			info := &AgentInfo{Name: name, ByKind: map[Kind]int{}}
			err := tx.Bucket(bucketAgents).Bucket(k).ForEach(func(_, v []byte) error {
				var it struct {
					Kind Kind `json:"kind"`
				}
				if err := json.Unmarshal(v, &it); err != nil {
					return fmt.Errorf("memory: %s: an item of agent %q is corrupt (%v)", s.path, name, err)
				}
				info.Items++
				info.ByKind[it.Kind]++
				return nil
			})
			infos[name] = info
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	for n, m := range loaded {
		m.mu.Lock()
		info := &AgentInfo{Name: n, Items: len(m.items), ByKind: map[Kind]int{}}
		for _, it := range m.items {
			info.ByKind[it.Kind]++
		}
		m.mu.Unlock()
		infos[n] = info
	}
	out := []AgentInfo{}
	for _, info := range infos {
		if info.Items > 0 {
			out = append(out, *info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Drop forgets an ephemeral agent's memory (a process without a name that
// ended). Persistent agents are untouched.
func (s *Store) Drop(agent string) {
	if !ephemeral(agent) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.agents, agent)
}
