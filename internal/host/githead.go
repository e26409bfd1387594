package host

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// gitHead returns the function that reads the Git commit the tool root at
// root is at (executor.Options.Commit, journaled with every run), or nil
// when root is not a Git working tree. It reads .git's files (HEAD, the
// branch's ref or packed-refs), nothing else: a few microseconds per run.
// A runtime with a Git upstream uses its repository's head instead.
func gitHead(root string) func() (string, error) {
	gitDir := filepath.Join(root, ".git")
	fi, err := os.Stat(gitDir)
	if err != nil {
		return nil
	}
	if !fi.IsDir() { // a linked worktree or submodule: "gitdir: PATH"
		b, err := os.ReadFile(gitDir)
		if err != nil || !bytes.HasPrefix(b, []byte("gitdir: ")) {
			return nil
		}
		gitDir = strings.TrimSpace(string(b[len("gitdir: "):]))
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(root, gitDir)
		}
	}
	return func() (string, error) { return readHead(gitDir) }
}

// readHead resolves HEAD in the Git directory dir to a commit hash.
func readHead(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "HEAD"))
	if err != nil {
		return "", err
	}
	head := strings.TrimSpace(string(b))
	ref, ok := strings.CutPrefix(head, "ref: ")
	if !ok {
		return head, nil // detached
	}
	common := dir
	if c, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil { // a linked worktree's refs live in the main repository
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(dir, common)
		}
	}
	for _, d := range []string{dir, common} {
		if b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
			return strings.TrimSpace(string(b)), nil
		}
	}
	f, err := os.Open(filepath.Join(common, "packed-refs"))
	if err != nil {
		return "", fmt.Errorf("git: %s has no commit yet", ref)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if h, name, ok := strings.Cut(sc.Text(), " "); ok && name == ref {
			return h, nil
		}
	}
	return "", fmt.Errorf("git: %s has no commit yet", ref)
}
