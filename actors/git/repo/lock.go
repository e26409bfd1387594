package repo

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// One writer per tool root, across processes.
//
// Every operation that touches a tool root's .git or working tree (Hydrate
// from its first step, Persist, Close) runs under an exclusive flock on the
// tool root directory, taken with lockRoot. Several processes (a serving
// node and CLI invocations, or runtimes started separately) may therefore
// share one tool root: they take turns, each operation sees the previous
// one complete, and none removes another's temporary files. The kernel
// releases the lock when a process dies.
//
// A Repo keeps state in memory between operations (the refs, the tree, the
// pack indexes go-git caches). When another process changed the tool root
// in between, the fingerprint of the refs and packs on disk (diskState)
// differs from the one this Repo recorded at the end of its last
// operation: its storage is reopened and its state reloaded from disk
// (as after a failure) before it goes on.

// lockRoot takes the tool root's lock, waiting for it until ctx ends.
func (r *Repo) lockRoot(ctx context.Context) (unlock func(), err error) {
	unlock, err = lockDirCtx(ctx, r.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("repo: waiting for the lock of the tool root %s (another process is writing it): %w", r.opts.Dir, err)
	}
	return unlock, nil
}

// diskState fingerprints what another writer of the tool root changes:
// our refs (packed-refs, and loose files that would shadow it) and the
// list of packs.
func (r *Repo) diskState() string {
	h := sha1.New()
	b, _ := os.ReadFile(filepath.Join(r.gitDir, "packed-refs"))
	h.Write(b)
	for _, ref := range []string{r.branchRef.String(), r.trackRef.String()} {
		b, _ := os.ReadFile(filepath.Join(r.gitDir, filepath.FromSlash(ref)))
		fmt.Fprintf(h, "\x00%s=%s", ref, b)
	}
	ents, _ := os.ReadDir(filepath.Join(r.gitDir, "objects", "pack"))
	var packs []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".pack") || strings.HasSuffix(e.Name(), ".idx") {
			packs = append(packs, e.Name())
		}
	}
	sort.Strings(packs)
	fmt.Fprintf(h, "\x00%s", strings.Join(packs, ","))
	return hex.EncodeToString(h.Sum(nil))
}

// refresh is called under the root lock before an operation: when another
// process wrote the tool root since this Repo's last operation, the
// storage is reopened and the state is reloaded at the next step.
func (r *Repo) refresh() {
	if s := r.diskState(); s != r.seen {
		r.log.Debug("git: the tool root was changed by another process; reloading its state")
		if err := r.sto.reopen(r.gitDir); err != nil {
			r.log.Warn("git: closing the object store", "err", err)
		}
		r.resync = true
	}
}

// remember records the disk state at the end of an operation (under the
// root lock).
func (r *Repo) remember() { r.seen = r.diskState() }

// lockWait bounds how long Close waits for the tool root's lock.
const lockWait = time.Minute
