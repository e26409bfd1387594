package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// waitTool spins, asking the tool tree each time, until tools/go.txt
// exists: a run SIGTERM interrupts and a restart can finish.
const waitTool = `/** Waits for tools/go.txt. */
export default async function (): Promise<string> {
  await tgp.write_file("/tmp/started", "yes");
  for (;;) {
    const files: string[] = await tgp.list_files("tools");
    if (files.includes("tools/go.txt")) return "finished after restart";
  }
}
`

// startServe runs 'agentos serve' as a real child process (this test binary
// in command mode) and waits for its socket. Its environment carries a
// marker so that the test can find every process it started, workers
// included.
func startServe(t *testing.T, root, tmp, marker string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--root", root)
	cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1", "TMPDIR="+tmp, "AGENTOS_TEST_MARKER="+marker)
	out := &lockedBuffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := admin.Dial(root); err == nil {
			c.Close()
			return cmd, out
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// marked lists the live processes whose environment holds marker.
func marked(marker string) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("AGENTOS_TEST_MARKER="+marker+"\x00")) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			continue // a zombie waiting for its parent's wait: already dead
		}
		out = append(out, d.Name())
	}
	return out
}

// The seed's "SIGTERM cleanliness": SIGTERM a node in the middle of a tool
// run. It exits 0; the run is cancelled and left resumable in a journal
// that checks clean; no worker process, temp directory, socket or lock file
// is left; and the next node resumes the run.
func TestServeSIGTERM(t *testing.T) {
	root := toolRoot(t, map[string]string{"tools/wait.ts": waitTool})
	tmp := t.TempDir()
	marker := fmt.Sprint(time.Now().UnixNano())
	cmd, out := startServe(t, root, tmp, marker)

	c, err := admin.Dial(root)
	if err != nil {
		t.Fatal(err)
	}
	called := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/wait.ts"}`))
		called <- err
	}()
	// The run is under way once its scratch directory exists.
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The run's own scratch directory, not any temp file the node made.
		if runs, _ := filepath.Glob(filepath.Join(tmp, "agentos-run-*")); len(runs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never started:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	c.Close()
	if werr != nil {
		t.Fatalf("serve exited with %v after SIGTERM:\n%s", werr, out.String())
	}
	if !strings.Contains(out.String(), "stopped cleanly") {
		t.Fatalf("no clean stop reported:\n%s", out.String())
	}
	<-called // answered (cancelled) or cut off: either way it returned
	if left := marked(marker); len(left) > 0 {
		t.Fatalf("processes left after SIGTERM: %v", left)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Fatalf("temp dirs left: %v", entries)
	}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".lock") || strings.HasSuffix(p, ".sock")) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
	j, err := journal.Open(filepath.Join(root, host.JournalFile), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Check(); err != nil {
		t.Fatalf("journal check: %v", err)
	}
	runs, err := j.Unfinished()
	j.Close()
	if err != nil || len(runs) != 1 || runs[0].Tool != "tools/wait.ts" {
		t.Fatalf("unfinished runs: %+v %v (want the interrupted one, resumable)", runs, err)
	}

	// The next node resumes it.
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd2, out2 := startServe(t, root, tmp, marker+"b")
	sc := bufio.NewScanner(strings.NewReader(out2.String()))
	resumed := false
	for sc.Scan() {
		resumed = resumed || strings.Contains(sc.Text(), "recovered run "+runs[0].ID) && strings.HasSuffix(sc.Text(), ": resumed")
	}
	if !resumed {
		t.Fatalf("the second node did not resume %s:\n%s", runs[0].ID, out2.String())
	}
	_ = cmd2.Process.Signal(syscall.SIGTERM)
	if err := cmd2.Wait(); err != nil {
		var ee *exec.ExitError
		errors.As(err, &ee)
		t.Fatalf("second node: %v\n%s", err, out2.String())
	}
}

// lockedBuffer is an output buffer the test reads while the child writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
