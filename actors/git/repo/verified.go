package repo

// The record of verified packs. A pack never changes once renamed into
// place (its name is its checksum), so hashing its whole content at every
// Hydrate makes the cost of a start grow with the history. Hydrate hashes a
// pack the first time it sees it and records its name, size and
// modification time (nanoseconds) in .git/agentos-verified; later starts
// check a recorded pack's header, object count (against its index) and
// trailing checksum (against its name and its index), and hash its content
// again only when its size or time changed. A pack truncated, extended or
// rewritten since (any write changes its time) is hashed again and found;
// IMPORTANT: a change that keeps both size and modification time (a
// deliberate touch -r, or a bit flipped by the disk) is found only when
// the damaged object is read, which runs the same repair (see repair.go).
// Verify (tests, `agentos doctor`) always hashes everything.

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// verifiedFile is the record, in the git directory.
const verifiedFile = "agentos-verified"

// packStamp is what identifies a verified pack file.
type packStamp struct {
	size  int64
	mtime int64
}

// verifiedPacks reads the record (empty when missing or unreadable).
func verifiedPacks(gitDir string) map[string]packStamp {
	out := map[string]packStamp{}
	b, err := os.ReadFile(filepath.Join(gitDir, verifiedFile))
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || !strings.HasPrefix(f[0], "pack-") || !strings.HasSuffix(f[0], ".pack") {
			continue
		}
		size, err1 := strconv.ParseInt(f[1], 10, 64)
		mtime, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			out[f[0]] = packStamp{size, mtime}
		}
	}
	return out
}

// verifyStore is Hydrate's check: Verify (shallow), trusting the packs the
// record names with their size and time, then the record rewritten with
// the packs found sound (when it changed).
func verifyStore(gitDir string) ([]Problem, error) {
	old := verifiedPacks(gitDir)
	seen := map[string]packStamp{}
	problems, err := verify(gitDir, false, func(name string, fi fs.FileInfo) bool {
		st := packStamp{fi.Size(), fi.ModTime().UnixNano()}
		seen[name] = st
		return old[name] == st
	})
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		delete(seen, filepath.Base(p.Path))
		delete(seen, strings.TrimSuffix(filepath.Base(p.Path), ".idx")+".pack")
	}
	same := len(seen) == len(old)
	for n, st := range seen {
		if old[n] != st {
			same = false
		}
	}
	if same {
		return problems, nil
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s %d %d\n", n, seen[n].size, seen[n].mtime)
	}
	// Losing the record costs one full hash at the next start, nothing
	// else: a failed write is not an error.
	_ = atomicWrite(gitDir, filepath.Join(gitDir, verifiedFile), b.Bytes(), 0o644)
	return problems, nil
}
