package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/agentos-run/agentos/internal/binform"
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
	index  string               // the search index's binary form ("": none)
	fields map[string]*Tool     // what index indexed: path, name, description, tags
	sum    [sha256.Size]byte    // the file's, as read or last written
}

// snapShard is one shard file's entries, as decoded from the content
// whose SHA-256 is sum.
type snapShard struct {
	sum     [sha256.Size]byte
	entries string // appendEntries
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
	d := binform.NewReader(string(body), len(snapMagic), errSnapshot)
	if d.String() != r.toolsDir || d.String() != r.dir {
		return false, d.Err()
	}
	for range d.Count(1) {
		f := d.String()
		var sh snapShard
		copy(sh.sum[:], d.Raw(sha256.Size))
		sh.entries = d.String()
		if d.Err() == nil {
			s.shards[f] = sh
		}
	}
	s.index = d.String()
	n := d.Count(4) // path, name, description, tags: 4 bytes at least
	s.fields = make(map[string]*Tool, n)
	for range n {
		t := &Tool{Path: d.String(), Name: d.String(), Description: d.String()}
		t.Tags = d.Strings()
		s.fields[t.Path] = t
	}
	if d.Err() == nil && d.Left() != 0 {
		d.Fail("%d bytes after its end", d.Left())
	}
	return true, d.Err()
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
	seen[f] = snapShard{sum: sum, entries: string(appendEntries(nil, m))}
}

// parseHook, when set (tests), is called with each shard file a Rebuild
// decodes from JSON.
var parseHook func(file string)

// takeIndex returns the snapshot's search index and the tools it indexed,
// for the first Rebuild (nil when there is none or it cannot be read);
// the snapshot lets go of them.
func (r *Registry) takeIndex() (*toolmeta.Inverted, map[string]*Tool) {
	b, fields := r.snap.index, r.snap.fields
	r.snap.index, r.snap.fields = "", nil
	if b == "" {
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
	b = binform.AppendString(binform.AppendString(b, r.toolsDir), r.dir)
	files := slices.Sorted(maps.Keys(written))
	b = binary.AppendUvarint(b, uint64(len(files)))
	shards := make(map[string]snapShard, len(files))
	for _, f := range files {
		sum := sha256.Sum256(written[f])
		sh, ok := r.snap.shards[f]
		if !ok || sh.sum != sum { // written since it was decoded: decode what was written
			m := map[string]*Tool{}
			r.parseFile(f, written[f], m)
			sh = snapShard{sum: sum, entries: string(appendEntries(nil, m))}
		}
		shards[f] = sh
		b = binform.AppendString(b, f)
		b = append(b, sh.sum[:]...)
		b = binform.AppendString(b, sh.entries)
	}
	r.snap.shards = shards
	r.mu.RLock()
	b = binform.AppendBytes(b, r.idx.AppendBinary(nil))
	paths := slices.Sorted(maps.Keys(r.tools))
	b = binary.AppendUvarint(b, uint64(len(paths)))
	for _, p := range paths {
		t := r.tools[p]
		b = binform.AppendStrings(binform.AppendString(binform.AppendString(binform.AppendString(b, p), t.Name), t.Description), t.Tags)
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
		b = binform.AppendString(b, p)
		b = binform.AppendString(b, t.Name)
		b = binform.AppendString(b, t.Description)
		if t.Parameters == nil {
			b = append(b, 0)
		} else {
			b = binform.AppendBytes(append(b, 1), t.Parameters)
		}
		b = binform.AppendStrings(b, t.Tags)
		b = binform.AppendString(b, t.Hash)
		b = binary.AppendVarint(b, int64(t.Version))
		b = binary.AppendVarint(b, int64(t.Usage))
		b = appendTime(b, t.Created)
		b = appendTime(b, t.Updated)
	}
	return b
}

// decodeEntries reads appendEntries's form: the entries, each path keyed.
// Their strings share s; their Parameters and times are cut from one copy
// of it.
func decodeEntries(s string) (map[string]*Tool, error) {
	d := binform.NewReader(s, 0, errSnapshot)
	raw := []byte(s)
	bytesOf := func(n int) []byte { // the next n bytes, from raw
		at := d.Pos()
		if d.Raw(n); d.Err() != nil {
			return nil
		}
		return raw[at : at+n : at+n]
	}
	n := d.Count(10) // an entry is 10 bytes at least
	m := make(map[string]*Tool, n)
	for range n {
		t := &Tool{Path: d.String(), Name: d.String(), Description: d.String()}
		if d.Byte() == 1 {
			t.Parameters = bytesOf(d.Count(1))
		}
		t.Tags = d.Strings()
		t.Hash = d.String()
		t.Version, t.Usage = int(d.Varint()), int(d.Varint())
		t.Created, t.Updated = timeOf(d, bytesOf(d.Count(1))), timeOf(d, bytesOf(d.Count(1)))
		m[t.Path] = t
	}
	if d.Err() == nil && d.Left() != 0 {
		d.Fail("%d bytes after a shard's entries", d.Left())
	}
	return m, d.Err()
}

// appendTime appends t's binary form (time.Time.MarshalBinary) as bytes.
func appendTime(b []byte, t time.Time) []byte {
	tb, err := t.MarshalBinary()
	if err != nil { // a year beyond what Go encodes: stored as zero
		tb = nil
	}
	return binform.AppendBytes(b, tb)
}

// timeOf is the time whose binary form is b (none: the zero time); a bad
// one fails d.
func timeOf(d *binform.Reader, b []byte) time.Time {
	var t time.Time
	if len(b) > 0 {
		if err := t.UnmarshalBinary(b); err != nil {
			d.Fail("a bad time")
		}
	}
	return t
}
