package executor

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// scratchPrefix names the per-run scratch directories (/tmp of a run) that
// vfs creates under the executor's TempDir.
const scratchPrefix = "agentos-run-"

// staleScratchAge is how old a scratch directory must be before it may be
// taken for a dead run's: a live process creates its directory and opens it
// a moment later, and must not lose it in between.
const staleScratchAge = 2 * time.Second

// cleanStaleScratch removes the scratch directories under dir that a killed
// process left behind (SIGKILL skips the run's cleanup): those owned by this
// user, older than staleScratchAge, that no process holds open (a live run
// keeps its scratch directory open for as long as it runs). It removes
// nothing when it cannot see every process of this user (e.g. /proc is
// absent or hides them): a directory in use is never taken for a stale one.
// It returns the directories it removed.
func cleanStaleScratch(dir string, log *slog.Logger) []string {
	if dir == "" {
		dir = os.TempDir()
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	candidates := staleCandidates(dir)
	if len(candidates) == 0 {
		return nil
	}
	held, err := heldOpen(dir + string(filepath.Separator) + scratchPrefix)
	if err != nil {
		log.Debug("agentos: left stale scratch directories alone", slog.Any("why", err))
		return nil
	}
	var removed []string
	for _, c := range candidates {
		if held(c) {
			continue
		}
		if err := os.RemoveAll(c); err != nil {
			log.Warn("agentos: removing a stale scratch directory", slog.String("dir", c), slog.Any("err", err))
			continue
		}
		removed = append(removed, c)
	}
	if len(removed) > 0 {
		log.Info("agentos: removed scratch directories left by killed runs", slog.Int("count", len(removed)), slog.String("dir", dir))
	}
	return removed
}

// staleCandidates are the scratch directories in dir owned by this user
// and older than staleScratchAge: stale unless a process holds them open.
func staleCandidates(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var candidates []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), scratchPrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || !ownedBy(info, os.Getuid()) {
			continue
		}
		if time.Since(info.ModTime()) < staleScratchAge {
			continue
		}
		candidates = append(candidates, filepath.Join(dir, e.Name()))
	}
	return candidates
}

// ownedBy reports whether info is of a file the user uid owns.
func ownedBy(info fs.FileInfo, uid int) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// heldOpen lists what every process of this user holds open (descriptors
// and working directory) under prefix, and returns whether a directory is
// one of them or contains one. It fails if a process of this user cannot be
// inspected.
func heldOpen(prefix string) (func(dir string) bool, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	uid := os.Getuid()
	var paths []string
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		held, err := heldBy(filepath.Join("/proc", p.Name()), uid, prefix)
		if err != nil {
			return nil, err
		}
		paths = append(paths, held...)
	}
	return func(dir string) bool {
		for _, p := range paths {
			if p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}, nil
}

// heldBy lists what the process at base (/proc/<pid>) holds open under
// prefix: its working directory and descriptors; none when it is another
// user's (it cannot open this user's 0700 scratch directories) or has
// exited. It fails when the process's descriptors cannot be seen (e.g. it
// is not dumpable).
func heldBy(base string, uid int, prefix string) ([]string, error) {
	info, err := os.Stat(base)
	if err != nil || !ownedBy(info, uid) {
		return nil, nil // it exited, or is another user's
	}
	var paths []string
	if cwd, err := os.Readlink(filepath.Join(base, "cwd")); err == nil && strings.HasPrefix(cwd, prefix) {
		paths = append(paths, cwd)
	}
	fds, err := os.ReadDir(filepath.Join(base, "fd"))
	if errors.Is(err, fs.ErrNotExist) {
		return paths, nil // it exited
	}
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(base, "fd", fd.Name())); err == nil && strings.HasPrefix(target, prefix) {
			paths = append(paths, target)
		}
	}
	return paths, nil
}
