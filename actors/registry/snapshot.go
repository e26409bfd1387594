package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/vfs"
)

// The snapshot: what a registry decoded and indexed, kept in the state
// directory (DefaultSnapshotFile) so that a later start does the work of
// what changed only (issue 28 goal 4). It holds two caches, each checked
// against what it stands for, so that a stale or foreign snapshot is
// never wrong, only useless:
//
//   - per shard file, the SHA-256 of its content and its valid entries in
//     binary: a shard whose content has that sum is not decoded from JSON
//     (its corrupt entries, if any, were logged when it was decoded);
//   - the search index in binary (toolmeta.DecodeInverted), with the name,
//     description and tags of each tool it indexed: Open's first Rebuild
//     starts from it, indexes again only the tools whose searched fields
//     differ, and drops the ones that are gone.
//
// It is written by Close (a stopped node), not on every change: a node
// killed before Close starts from its last snapshot, or from none, and is
// as correct either way. A damaged file (its CRC-32C, its header, an
// unreadable part, an index another tokenizer built) is logged at Warn and
// ignored. IMPORTANT: it is trusted for what it checks, as the registry
// log beside it is: the state directory MUST be the node's own. A field
// added to Tool MUST be added to appendEntries and decodeEntries, with
// snapMagic's version raised (TestSnapshotEntriesCarryEveryField).
//
//	"agentos-registry-snap 1\n" toolsDir shardsDir
//	shards { file sum[32] entries }...   index fields { path name description tags }...
//	crc32c of everything before (4 bytes, little-endian)

// DefaultSnapshotFile is the snapshot's file in the state directory.
const DefaultSnapshotFile = "registry.snap"

const snapMagic = "agentos-registry-snap 1\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errSnapshot is a snapshot (or a part of one) that cannot be read.
var errSnapshot = errors.New("not a registry snapshot")

// snapshot is a loaded snapshot, and what this registry adds to it. It is
// guarded by r.mut.
type snapshot struct {
	shards map[string]snapShard // by shard file
	index  []byte               // the search index's binary form (nil: none)
	fields map[string]*Tool     // what index indexed: path, name, description, tags
	sum    [sha256.Size]byte    // the file's, as read or last written
}

// snapShard is one shard file's entries, as decoded from the content
// whose SHA-256 is sum.
type snapShard struct {
	sum     [sha256.Size]byte
	entries []byte // appendEntries
}

// loadSnapshot reads the snapshot of the state directory; an absent one,
// or one written for other options, is empty, and a damaged one is logged.
func (r *Registry) loadSnapshot() *snapshot {
	s := &snapshot{shards: map[string]snapShard{}}
	if r.state == nil {
		return s
	}
	b, err := r.state.ReadFile(r.snapFile)
	if errors.Is(err, vfs.ErrNotFound) {
		return s
	}
	if err == nil {
		var ok bool
		if ok, err = r.decodeSnapshot(b, s); err == nil && !ok {
			return &snapshot{shards: map[string]snapShard{}} // another tools directory: useless
		}
	}
	if err != nil {
		r.log.Warn("registry: ignoring a damaged snapshot of the registry; this start decodes and indexes every tool, and the snapshot is written again when the registry closes", slog.String("file", r.snapFile), slog.Any("err", err))
		return &snapshot{shards: map[string]snapShard{}}
	}
	s.sum = sha256.Sum256(b)
	return s
}

// decodeSnapshot reads b into s; false when it was written for another
// tools directory or registry file.
func (r *Registry) decodeSnapshot(b []byte, s *snapshot) (bool, error) {
	if len(b) < len(snapMagic)+4 || string(b[:len(snapMagic)]) != snapMagic {
		return false, fmt.Errorf("%w: no header", errSnapshot)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(body):]) {
		return false, fmt.Errorf("%w: checksum mismatch (a damaged file)", errSnapshot)
	}
	d := &snapReader{b: body, i: len(snapMagic)}
	if d.string() != r.toolsDir || d.string() != r.dir {
		return false, d.err
	}
	for range d.count() {
		f := d.string()
		var sh snapShard
		copy(sh.sum[:], d.bytes(sha256.Size))
		sh.entries = d.bytes(d.count())
		if d.err == nil {
			s.shards[f] = sh
		}
	}
	if idx := d.bytes(d.count()); len(idx) > 0 {
		s.index = idx
	}
	n := d.count()
	s.fields = make(map[string]*Tool, min(n, len(body)))
	for range n {
		t := &Tool{Path: d.string(), Name: d.string(), Description: d.string()}
		t.Tags = d.strings()
		s.fields[t.Path] = t
	}
	if d.err == nil && d.i != len(body) {
		d.err = fmt.Errorf("%w: %d bytes after its end", errSnapshot, len(body)-d.i)
	}
	return true, d.err
}

// decodeShard adds the entries of the shard file f (content raw) to out:
// from the snapshot when it holds them for this content, else decoded from
// JSON (parseFile) and added to the snapshot.
func (r *Registry) decodeShard(f string, raw []byte, out map[string]*Tool, seen map[string]snapShard) {
	sum := sha256.Sum256(raw)
	if sh, ok := r.snap.shards[f]; ok && sh.sum == sum {
		if m, err := decodeEntries(sh.entries); err == nil {
			maps.Copy(out, m)
			seen[f] = sh
			return
		}
	}
	if parseHook != nil {
		parseHook(f)
	}
	m := map[string]*Tool{}
	r.parseFile(f, raw, m)
	maps.Copy(out, m)
	seen[f] = snapShard{sum: sum, entries: appendEntries(nil, m)}
}

// parseHook, when set (tests), is called with each shard file a Rebuild
// decodes from JSON.
var parseHook func(file string)

// takeIndex returns the snapshot's search index and the tools it indexed,
// for the first Rebuild (nil when there is none or it cannot be read);
// the snapshot lets go of them.
func (r *Registry) takeIndex() (*toolmeta.Inverted, map[string]*Tool) {
	b, fields := r.snap.index, r.snap.fields
	r.snap.index, r.snap.fields = nil, nil
	if b == nil {
		return nil, nil
	}
	x, err := toolmeta.DecodeInverted(b)
	if err != nil {
		r.log.Warn("registry: ignoring the snapshot's search index; every tool is indexed again", slog.String("file", r.snapFile), slog.Any("err", err))
		return nil, nil
	}
	return x, fields
}

// saveSnapshot writes the snapshot of the shard files as written and of
// the search index, unless the file holds it already; a failure is
// logged, never an error (the next start does the work). The caller MUST
// hold r.mut.
func (r *Registry) saveSnapshot() {
	if r.state == nil {
		return
	}
	r.io.Lock()
	written := maps.Clone(r.written)
	r.io.Unlock()
	b := append([]byte(nil), snapMagic...)
	b = appendString(appendString(b, r.toolsDir), r.dir)
	files := slices.Sorted(maps.Keys(written))
	b = binary.AppendUvarint(b, uint64(len(files)))
	shards := make(map[string]snapShard, len(files))
	for _, f := range files {
		sum := sha256.Sum256(written[f])
		sh, ok := r.snap.shards[f]
		if !ok || sh.sum != sum { // written since it was decoded: decode what was written
			m := map[string]*Tool{}
			r.parseFile(f, written[f], m)
			sh = snapShard{sum: sum, entries: appendEntries(nil, m)}
		}
		shards[f] = sh
		b = appendString(b, f)
		b = append(b, sh.sum[:]...)
		b = appendBytes(b, sh.entries)
	}
	r.snap.shards = shards
	r.mu.RLock()
	b = appendBytes(b, r.idx.AppendBinary(nil))
	paths := slices.Sorted(maps.Keys(r.tools))
	b = binary.AppendUvarint(b, uint64(len(paths)))
	for _, p := range paths {
		t := r.tools[p]
		b = appendStrings(appendString(appendString(appendString(b, p), t.Name), t.Description), t.Tags)
	}
	r.mu.RUnlock()
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	sum := sha256.Sum256(b)
	if sum == r.snap.sum {
		return
	}
	if err := r.state.WriteFile(r.snapFile, b); err != nil {
		r.log.Warn("registry: cannot write the snapshot of the registry; the next start decodes and indexes every tool", slog.String("file", r.snapFile), slog.Any("err", err))
		return
	}
	r.snap.sum = sum
}

// appendEntries appends the binary form of a shard's entries (decodeEntries).
func appendEntries(b []byte, m map[string]*Tool) []byte {
	b = binary.AppendUvarint(b, uint64(len(m)))
	for _, p := range slices.Sorted(maps.Keys(m)) {
		t := m[p]
		b = appendString(b, p)
		b = appendString(b, t.Name)
		b = appendString(b, t.Description)
		if t.Parameters == nil {
			b = append(b, 0)
		} else {
			b = appendBytes(append(b, 1), t.Parameters)
		}
		b = appendStrings(b, t.Tags)
		b = appendString(b, t.Hash)
		b = binary.AppendVarint(b, int64(t.Version))
		b = binary.AppendVarint(b, int64(t.Usage))
		b = appendTime(b, t.Created)
		b = appendTime(b, t.Updated)
	}
	return b
}

// decodeEntries reads appendEntries's form: the entries, each path keyed.
func decodeEntries(b []byte) (map[string]*Tool, error) {
	d := &snapReader{b: b, s: string(b)}
	params := bytes.Clone(b) // the entries' Parameters share it, as their strings share s
	n := d.count()
	m := make(map[string]*Tool, min(n, len(b)/10)) // an entry is 10 bytes at least
	for range n {
		t := &Tool{Path: d.string(), Name: d.string(), Description: d.string()}
		if d.byte() == 1 {
			k := d.count()
			if d.err == nil {
				t.Parameters = params[d.i : d.i+k : d.i+k]
			}
			d.skip(k)
		}
		t.Tags = d.strings()
		t.Hash = d.string()
		t.Version, t.Usage = int(d.varint()), int(d.varint())
		t.Created, t.Updated = d.time(), d.time()
		m[t.Path] = t
	}
	if d.err == nil && d.i != len(b) {
		d.err = fmt.Errorf("%w: %d bytes after a shard's entries", errSnapshot, len(b)-d.i)
	}
	return m, d.err
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBytes(b, s []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendStrings appends a list of strings; nil and empty are alike (an
// entry has nil Tags for none).
func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendTime(b []byte, t time.Time) []byte {
	tb, err := t.MarshalBinary()
	if err != nil { // a year beyond what Go encodes: stored as zero
		tb = nil
	}
	return appendBytes(b, tb)
}

// snapReader reads the snapshot's binary forms; its first error sticks.
type snapReader struct {
	b   []byte
	s   string // b as a string when strings are cut from it (decodeEntries)
	i   int
	err error
}

func (d *snapReader) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", errSnapshot, what, d.i)
	}
}

func (d *snapReader) byte() byte {
	if d.err != nil || d.i >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	d.i++
	return d.b[d.i-1]
}

// count reads a length: no more than the bytes left.
func (d *snapReader) count() int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 || v > uint64(len(d.b)-d.i-n) {
		d.fail("a length out of range")
		return 0
	}
	d.i += n
	return int(v)
}

func (d *snapReader) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.i:])
	if n <= 0 {
		d.fail("a bad number")
		return 0
	}
	d.i += n
	return v
}

func (d *snapReader) skip(n int) {
	if d.err == nil {
		d.i += n
	}
}

// bytes returns the next n bytes (sharing b).
func (d *snapReader) bytes(n int) []byte {
	if d.err != nil || n > len(d.b)-d.i {
		d.fail("truncated")
		return nil
	}
	d.i += n
	return d.b[d.i-n : d.i : d.i]
}

func (d *snapReader) string() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	d.i += n
	if d.s != "" {
		return d.s[d.i-n : d.i]
	}
	return string(d.b[d.i-n : d.i])
}

// strings reads a list of strings; an empty one is nil.
func (d *snapReader) strings() []string {
	n := d.count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.string()
	}
	return out
}

func (d *snapReader) time() time.Time {
	b := d.bytes(d.count())
	var t time.Time
	if len(b) > 0 {
		if err := t.UnmarshalBinary(b); err != nil {
			d.fail("a bad time")
		}
	}
	return t
}
