package host

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecureStateLogsOnce: state left readable by others (as a tool root
// copied with a umask of 022 leaves it) is made private, files 0600 and
// directories 0700, and the change is logged in one line however many
// paths it took, not one line per file.
func TestSecureStateLogsOnce(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, StateDir)
	dir := filepath.Join(state, "objects")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o755); err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(state, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")}
	for _, f := range files {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if err := (Config{}).secureState(root, log); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{state, dir} {
		if fi, _ := os.Stat(d); fi.Mode().Perm() != 0o700 {
			t.Errorf("%s is %v, want 0700", d, fi.Mode().Perm())
		}
	}
	for _, f := range files {
		if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", f, fi.Mode().Perm())
		}
	}
	out := buf.String()
	if n := strings.Count(out, "made state private"); n != 1 || !strings.Contains(out, "paths=5") {
		t.Fatalf("want one line saying 5 paths were made private, got:\n%s", out)
	}
	buf.Reset()
	if err := (Config{}).secureState(root, log); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("private state was reported again:\n%s", buf.String())
	}
}
