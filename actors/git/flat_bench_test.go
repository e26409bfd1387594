package git_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/agentos-run/agentos/actors/git"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/registry"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/internal/benchutil"
	"github.com/agentos-run/agentos/vfs"
)

// flatTool is the source of the i-th tool of a generated tool root: a
// JSDoc description with a tag and a typed parameter, the shape forged
// tools have.
func flatTool(i int) string {
	return fmt.Sprintf("/**\n * Computes the figure number %d of a series from a start value and a count.\n * @tag series, figure%d\n */\nexport default function (a: { start: number; count: number }): number {\n  return a.start * %d + a.count;\n}\n", i, i%97, i)
}

// layout is a generated tool root: n tools, all in tools/ (dirs 0), or
// spread over dirs subdirectories tools/gNN/.
type layout struct{ n, dirs int }

// toolPath is the path of the i-th tool of l.
func (l layout) toolPath(i int) string {
	if l.dirs == 0 {
		return fmt.Sprintf("tools/t%05d.ts", i)
	}
	return fmt.Sprintf("tools/g%02d/t%05d.ts", i%l.dirs, i)
}

// upstreamWithTools returns a bare upstream whose main branch holds the
// tools of l and their registry, in one commit made with the git command
// (the repository is written directly, not through n writes).
//
// upstreams caches one upstream per layout for the parent benchmark (a
// sub-benchmark runs several times as b.N grows, and building 10,000 tools
// takes seconds); base is the parent's temporary directory, removed when
// it ends.
func upstreamWithTools(b *testing.B, l layout, base string, upstreams map[layout]string) string {
	b.Helper()
	n := l.n
	if up, ok := upstreams[l]; ok {
		return up
	}
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("the git command is needed to build the benchmark's upstream: install git")
	}
	base = filepath.Join(base, fmt.Sprintf("%d-%d", l.n, l.dirs))
	work := filepath.Join(base, "work")
	for i := range n {
		f := filepath.Join(work, filepath.FromSlash(l.toolPath(i)))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(flatTool(i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// The registry as a node writes it, from the tools.
	jail, err := vfs.Open(work)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := registry.Open(jail, registry.Options{File: "meta.json", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Close(); err != nil {
		b.Fatal(err)
	}
	jail.Close()
	up := filepath.Join(base, "up.git")
	for _, args := range [][]string{
		{"-C", work, "init", "-q", "-b", "main"},
		{"-C", work, "add", "-A"},
		{"-C", work, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "tools"},
		{"clone", "-q", "--bare", work, up},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	upstreams[l] = up
	return up
}

// node wires a tool root on up the way the runtime does: Hydrate, the
// registry opened by its Regenerate with its log in .agentos, flushed
// before each commit (Derive), and a git actor registering every write.
func flatNode(b *testing.B, up string) (*gitclient.Client, func()) {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".agentos"), 0o700); err != nil {
		b.Fatal(err)
	}
	jail, err := vfs.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	state, err := vfs.Open(filepath.Join(dir, ".agentos"))
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	var reg *registry.Registry
	regenerate := func() error {
		if reg != nil {
			return reg.Rebuild()
		}
		r, err := registry.Open(jail, registry.Options{File: "meta.json", Logger: quiet, State: state})
		if err == nil {
			reg = r
		}
		return err
	}
	rp, err := repo.Hydrate(context.Background(), repo.Options{
		Dir: dir, Upstream: up, Branch: "main",
		Derived: registry.Files("meta.json"), Regenerate: regenerate,
		Derive: func() ([]string, error) {
			if reg == nil {
				return nil, nil
			}
			err := reg.Flush()
			return reg.Written(), err
		},
		Ignore: []string{".agentos/"}, Logger: quiet,
	})
	if err != nil {
		b.Fatal(err)
	}
	if reg == nil {
		if err := regenerate(); err != nil {
			b.Fatal(err)
		}
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	rpid := sys.Root.Spawn(registry.Props(reg))
	rc := regclient.New(sys.Root, rpid)
	rc.Timeout = time.Minute
	pid := sys.Root.Spawn(git.Props(git.Options{Jail: jail, Repo: rp, Registry: rc}))
	c := gitclient.New(sys.Root, pid)
	c.Timeout = time.Minute
	return c, func() {
		_ = sys.Root.StopFuture(pid).Wait()
		_ = sys.Root.PoisonFuture(rpid).Wait()
		sys.Shutdown()
		reg.Close()
		rp.Close()
		state.Close()
		jail.Close()
	}
}

// BenchmarkWriteFileAtNTools is write_file of a new tool (register,
// commit, push to a local bare upstream) through the git actor wired as a
// node wires it, in a tool root that already holds 10, 1,000 or 10,000
// tools (built directly in the setup, not timed). Issue 28's goal: the
// write at 10,000 tools within 1.5x of the same write at 10. Each op
// writes a tool never written before, in tools/ beside the others (all in
// one directory: Git then rewrites that directory's tree object, 10,000
// entries, at every commit). "10000-in-100-dirs" is the same 10,000 tools
// spread over 100 subdirectories, the write going into one of them: what
// is left when no directory is large.
func BenchmarkWriteFileAtNTools(b *testing.B) {
	base, upstreams := b.TempDir(), map[layout]string{}
	for _, l := range []layout{{10, 0}, {1000, 0}, {10000, 0}, {10000, 100}} {
		name := fmt.Sprint(l.n)
		if l.dirs > 0 {
			name = fmt.Sprintf("%d-in-%d-dirs", l.n, l.dirs)
		}
		b.Run(name, func(b *testing.B) {
			n := l.n
			up := upstreamWithTools(b, l, base, upstreams)
			c, stop := flatNode(b, up)
			defer stop()
			ctx := context.Background()
			var laps benchutil.Laps // the median too: a write now and then merges packs (repack)
			defer laps.Report(b)
			b.ResetTimer()
			for i := range b.N {
				p := fmt.Sprintf("tools/w%d-%d.ts", time.Now().UnixNano(), i)
				if l.dirs > 0 {
					p = fmt.Sprintf("tools/g%02d/w%d-%d.ts", i%l.dirs, time.Now().UnixNano(), i)
				}
				laps.Start()
				_, err := c.WriteFile(ctx, p, []byte(flatTool(n+i)))
				laps.Stop()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteFileFloor is BenchmarkWriteFileAtNTools's floor, to run in
// the same window: "git-cli-N" is the git command writing one new file
// beside N tools in tools/ (add, commit, push to the bare upstream: the
// work a write_file does, without the registry), timed from outside;
// "tree-encode-N" is go-git encoding and hashing the tools/ tree object of
// N+1 entries alone, in memory (what any commit into that directory
// rewrites); "tree-floor-N" is the least Git's format asks of that tree
// once a commit: its bytes written and hashed, one compressed copy stored
// (zlib BestSpeed, git's default for loose objects) and the receiver
// hashing it again. The write at N tools cannot cost less than the write
// at 10 plus the difference of their tree floors.
func BenchmarkWriteFileFloor(b *testing.B) {
	base, upstreams := b.TempDir(), map[layout]string{}
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("git-cli-%d", n), func(b *testing.B) {
			up := upstreamWithTools(b, layout{n, 0}, base, upstreams)
			work := filepath.Join(b.TempDir(), "work")
			// gc.auto=0: a commit beside 10,000 loose objects would start
			// git's background gc, still writing when the test ends.
			gitRun(b, "clone", "-q", "-c", "gc.auto=0", up, work)
			b.ResetTimer()
			for i := range b.N {
				p := fmt.Sprintf("tools/w%d-%d.ts", time.Now().UnixNano(), i)
				if err := os.WriteFile(filepath.Join(work, filepath.FromSlash(p)), []byte(flatTool(n+i)), 0o644); err != nil {
					b.Fatal(err)
				}
				gitRun(b, "-C", work, "add", p)
				gitRun(b, "-C", work, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "write "+p)
				gitRun(b, "-C", work, "push", "-q", "origin", "main")
			}
		})
		b.Run(fmt.Sprintf("tree-encode-%d", n), func(b *testing.B) { benchTreeEncode(b, n) })
		b.Run(fmt.Sprintf("tree-floor-%d", n), func(b *testing.B) { benchTreeFloor(b, n) })
	}
}

// benchTreeEncode encodes and hashes a tree object of n+1 blob entries.
func benchTreeEncode(b *testing.B, n int) {
	t := &object.Tree{}
	for i := range n + 1 {
		t.Entries = append(t.Entries, object.TreeEntry{Name: fmt.Sprintf("t%05d.ts", i), Mode: filemode.Regular, Hash: plumbing.ComputeHash(plumbing.BlobObject, []byte(flatTool(i)))})
	}
	b.ResetTimer()
	for range b.N {
		o := &plumbing.MemoryObject{}
		if err := t.Encode(o); err != nil {
			b.Fatal(err)
		}
		_ = o.Hash()
	}
}

// benchTreeFloor is the least a commit does with a tree object of n+1
// blob entries: its bytes written out, hashed, compressed once at
// BestSpeed (by a writer reused, as the runtime's are) and hashed again
// by the receiver.
func benchTreeFloor(b *testing.B, n int) {
	var ents []byte
	for i := range n + 1 {
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte(flatTool(i)))
		ents = append(append(append(ents, fmt.Sprintf("100644 t%05d.ts", i)...), 0), h[:]...)
	}
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestSpeed)
	b.ResetTimer()
	for range b.N {
		content := append([]byte(nil), ents...)
		_ = plumbing.ComputeHash(plumbing.TreeObject, content)
		buf.Reset()
		zw.Reset(&buf)
		if _, err := zw.Write(content); err != nil {
			b.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			b.Fatal(err)
		}
		_ = plumbing.ComputeHash(plumbing.TreeObject, content)
	}
}

func gitRun(b *testing.B, args ...string) {
	b.Helper()
	if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
