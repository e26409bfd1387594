package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/cmd/agentos/internal/quickhelp"
)

// stampFlag sets a build stamp (see workerside.stamp) at link time.
const stampFlag = "-X github.com/agentos-run/agentos/actors/executor/internal/workerside.stamp="

// goBuild builds pkgs (in dir, with a build stamp) into out.
func goBuild(t *testing.T, dir, stamp, out string, pkgs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-ldflags", stampFlag + stamp, "-o", out}, pkgs...)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, b)
	}
}

// fakeWorker is a program that greets as a worker of another build: what a
// worker file replaced after the pool checked it would say.
const fakeWorker = `package main

import (
	"encoding/binary"
	"os"
)

func main() {
	hello := []byte(` + "`" + `{"t":"hello","build":"forged","prot":{"mode":"best_effort"}}` + "`" + `)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(hello)))
	os.Stdout.Write(append(n[:], hello...))
	buf := make([]byte, 1<<16)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return
		}
	}
}
`

// versionOf runs bin version --json and returns what it says.
func versionOf(t *testing.T, bin, root string) versionInfo {
	t.Helper()
	out, err := exec.Command(bin, "version", "--json", "--root", root).Output()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil || v.Worker == nil || v.Protections == nil {
		t.Fatalf("%s version --json: %v: %s", bin, err, out)
	}
	return v
}

// execHello runs the tool hello.ts through bin and returns its output.
func execHello(t *testing.T, bin, root, name string) (string, error) {
	t.Helper()
	out, err := exec.Command(bin, "exec", "--root", root, "--no-journal", "tools/hello.ts", `{"name":"`+name+`"}`).CombinedOutput()
	return string(out), err
}

// TestSeparateWorkerBinary builds agentos and agentos-worker together and
// runs a tool through the separate worker, confined as the executable's
// own worker is; a worker that is not executable, of another build, or
// that greets as another build is never run as one.
func TestSeparateWorkerBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agentos and agentos-worker (minutes on a loaded machine)")
	}
	dir := t.TempDir()
	bin, wbin := filepath.Join(dir, "agentos"), filepath.Join(dir, executor.WorkerBinaryName)
	goBuild(t, "../..", "e2e", dir+string(filepath.Separator), "./cmd/agentos", "./cmd/agentos-worker")
	root := filepath.Join(t.TempDir(), "root")
	if out, err := exec.Command(bin, "init", "--no-git", root).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	tool := "export default async function main(args: { name: string }) { return 'hello, ' + args.name + ' ' + (Date.now() > 0); }\n"
	if err := os.WriteFile(filepath.Join(root, "tools", "hello.ts"), []byte(tool), 0o644); err != nil {
		t.Fatal(err)
	}

	// Built together: the separate worker runs the tool, confined as the
	// executable's own worker is (the executable's Probe in this process).
	v := versionOf(t, bin, root)
	if !v.Worker.Separate || v.Worker.Path != wbin {
		t.Fatalf("agentos built with agentos-worker uses %+v", v.Worker)
	}
	// The help, answered from the executable's own build information
	// before most packages initialise, names the build as version does.
	if out, err := exec.Command(bin, "help").Output(); err != nil || !strings.HasPrefix(string(out), quickhelp.Head(v.Version, v.Commit, v.Modified)+": ") {
		t.Errorf("agentos help (%v) does not begin with version's head %q:\n%s", err, quickhelp.Head(v.Version, v.Commit, v.Modified), out)
	}
	self, err := executor.Probe(context.Background(), executor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, want := *v.Protections, self
	got.RlimitAS.Bytes, want.RlimitAS.Bytes = 0, 0 // the two programs' address spaces differ
	got.SetupMicros, want.SetupMicros = 0, 0       // and so do the times they took
	if !jsonEqual(t, got, want) {
		t.Errorf("the separate worker's protections %+v differ from the executable's %+v", got, want)
	}
	if out, err := execHello(t, bin, root, "ada"); err != nil || !strings.Contains(out, `"hello, ada true"`) {
		t.Fatalf("exec through the separate worker: %v\n%s", err, out)
	}

	// Not executable: the executable is its own worker again.
	if err := os.Chmod(wbin, 0o644); err != nil {
		t.Fatal(err)
	}
	if v := versionOf(t, bin, root); v.Worker.Separate || v.Worker.Path != bin || !v.Worker.Refused || !strings.Contains(v.Worker.Why, "not an executable file") {
		t.Errorf("a worker that is not executable: %+v", v.Worker)
	}
	if out, err := execHello(t, bin, root, "bob"); err != nil || !strings.Contains(out, `"hello, bob true"`) {
		t.Fatalf("exec with the executable as worker: %v\n%s", err, out)
	}

	// Of another build (a stale one), or greeting as another build.
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "go.mod"), []byte("module fakeworker\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "main.go"), []byte(fakeWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	goBuild(t, fake, "stale", wbin, ".")
	if v := versionOf(t, bin, root); v.Worker.Separate || !v.Worker.Refused || !strings.Contains(v.Worker.Why, "is not from this program's build") {
		t.Errorf("a worker of another build: %+v", v.Worker)
	}
	if out, err := execHello(t, bin, root, "cy"); err != nil || !strings.Contains(out, `"hello, cy true"`) {
		t.Fatalf("exec beside a stale worker: %v\n%s", err, out)
	}
	goBuild(t, fake, "e2e", wbin, ".") // its file says this build; its hello does not
	if out, err := execHello(t, bin, root, "di"); err == nil || !strings.Contains(out, `says it is build "forged", not this program's`) {
		t.Fatalf("exec through a worker greeting as another build: %v\n%s", err, out)
	}
}

// jsonEqual compares a and b as JSON.
func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(ja) == string(jb)
}
