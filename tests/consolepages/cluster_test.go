package consolepages_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/agentos-run/agentos/tests/internal/scenario"
)

// The environment of a member process of the test cluster: its tool root
// (set: this test binary runs as that member, not as tests), the shared
// upstream, the seeds, its health port and the cluster's name.
const (
	memberRootEnv     = "AGENTOS_CONSOLEPAGES_MEMBER"
	memberUpstreamEnv = "AGENTOS_CONSOLEPAGES_UPSTREAM"
	memberSeedsEnv    = "AGENTOS_CONSOLEPAGES_SEEDS"
	memberHealthEnv   = "AGENTOS_CONSOLEPAGES_HEALTH"
	memberClusterEnv  = "AGENTOS_CONSOLEPAGES_CLUSTER"
	clusterKeyEnv     = "CONSOLEPAGES_CLUSTER_KEY"
	// memberWorker is the name of a process only the member process runs.
	memberWorker = "member-two-worker"
)

func TestMain(m *testing.M) {
	if root := os.Getenv(memberRootEnv); root != "" {
		os.Exit(runMember(root))
	}
	os.Exit(m.Run())
}

// clusterNodeConfig is the configuration of a node of the test cluster at
// root (initialized for the upstream bare).
func clusterNodeConfig(root, bare, name string, seeds []string, health int) (host.Config, error) {
	if _, err := host.Init(root, host.InitOptions{Upstream: bare}); err != nil {
		return host.Config{}, err
	}
	cfg, err := host.LoadConfig(root)
	if err != nil {
		return host.Config{}, err
	}
	cfg.Root, cfg.Isolation, cfg.Logger = root, "inprocess", quiet
	cfg.LLM = host.LLMConfig{BaseURL: "http://127.0.0.1:1", Model: "none", ForgeAttempts: 1} // a forge fails at once: no model
	cfg.Capability.SigningKeyEnv = clusterKeyEnv
	cfg.Cluster = host.ClusterConfig{Enabled: true, Name: name, Seeds: seeds, HealthPort: health, InsecureLoopback: true}
	return cfg, nil
}

// runMember is this binary as the second member of the test's cluster: a
// node with a process of its own (memberWorker), which prints "ready
// ADDRESS" and runs until its standard input closes.
func runMember(root string) int {
	health, _ := strconv.Atoi(os.Getenv(memberHealthEnv))
	cfg, err := clusterNodeConfig(root, os.Getenv(memberUpstreamEnv), os.Getenv(memberClusterEnv), strings.Split(os.Getenv(memberSeedsEnv), ","), health)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer rt.Close()
	idle := func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }
	if _, err := rt.Kernel().Spawn(idle, kernel.SpawnOptions{Name: memberWorker, Image: "worker"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ready %s\n", rt.Member().Address())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// syncBuffer is a child's standard error, written by exec's copier.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// clusterOfTwo starts a cluster of two node processes: this one (whose
// console it serves on loopback) and a member process (this test binary
// run as runMember), joined by seeds on loopback, sharing a Git upstream
// and the capability key. It returns this node, its console, and the
// member process.
func clusterOfTwo(t *testing.T) (*host.Runtime, *httptest.Server, *memberProc) {
	t.Helper()
	if scenario.RaceEnabled {
		t.Skip("not under -race: protoactor's cluster and remote race internally (docs/CLUSTER.md); the plain go test run runs this test")
	}
	t.Setenv(clusterKeyEnv, hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	bare := scenario.Upstream(t)
	ports := scenario.FreePorts(t, 2)
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])}
	mp := startMember(t, bare, seeds, ports[1])
	cfg, err := clusterNodeConfig(filepath.Join(t.TempDir(), "node1"), bare, t.Name(), seeds, ports[0])
	if err != nil {
		t.Fatal(err)
	}
	rt, ts := serveNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.Member().WaitMembers(ctx, 2); err != nil {
		t.Fatalf("the member process %s did not join: %v\nits log:\n%s", mp.addr, err, mp.log.String())
	}
	return rt, ts, mp
}

// memberProc is the member process of the test cluster.
type memberProc struct {
	addr string
	cmd  *exec.Cmd
	log  *syncBuffer
}

// startMember starts the member process and returns it once it is ready;
// it ends when the test does.
func startMember(t *testing.T, bare string, seeds []string, health int) *memberProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberRootEnv+"="+filepath.Join(t.TempDir(), "node2"), memberUpstreamEnv+"="+bare,
		memberSeedsEnv+"="+strings.Join(seeds, ","), memberHealthEnv+"="+strconv.Itoa(health), memberClusterEnv+"="+t.Name())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the member closes its node and exits
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("the member process did not end when told; its log:\n%s", stderr.String())
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- a
			}
		}
	}()
	select {
	case a := <-ready:
		return &memberProc{addr: a, cmd: cmd, log: stderr}
	case <-time.After(60 * time.Second):
		t.Fatalf("the member process is not ready after 60 s; its log:\n%s", stderr.String())
		return nil
	}
}

// forgeSomewhere starts a forge (which fails: the nodes have no model) so
// that one member holds a forge grain; it returns the spec's hash.
func forgeSomewhere(t *testing.T, rt *host.Runtime) string {
	t.Helper()
	const spec = "a tool that returns the n-th Fibonacci number"
	_, _ = scenario.ForgeOn(rt, spec) // fails without a model: the grain stays
	return forge.SpecHash(spec)
}

// The Cluster page against a cluster of two node processes: a token
// without read on the whole tree is refused it (403), and another member's
// processes too, while this node's stay open to it; a token with the
// right sees both members, each as it answered (its version, what it
// hosts, the forge grain one of them holds), and the member process's own
// processes, asked of its kernel with the session's token. An address
// that is no member is refused before anything is sent to it.
func TestClusterPageNeedsTheRight(t *testing.T) {
	rt, ts, mp := clusterOfTwo(t)
	hash, other := forgeSomewhere(t, rt), mp.addr
	self := rt.Member().Address()

	narrow := login(t, ts, mint(rt, "narrow", capability.Grant{Right: capability.Read, Scope: "tools/"}))
	if code, page := narrow.get("/cluster"); code != http.StatusForbidden || !strings.Contains(page, "--grant read") {
		t.Errorf("/cluster for a token with read on tools/ only: %d, want 403 saying which grant\n%s", code, page)
	}
	if code, page := narrow.get("/procs?node=" + url.QueryEscape(other)); code != http.StatusForbidden || strings.Contains(page, memberWorker) {
		t.Errorf("another member's processes for a token with read on tools/ only: %d, want 403\n%s", code, page)
	}
	if code, page := narrow.get("/procs"); code != http.StatusOK || !strings.Contains(page, "<strong>agent</strong>") {
		t.Errorf("this node's processes for any token: %d\n%s", code, page)
	}

	ops := login(t, ts, mint(rt, "ops", capability.Grant{Right: capability.Read}))
	code, page := ops.get("/cluster")
	if code != http.StatusOK {
		t.Fatalf("/cluster for a token with read: %d\n%s", code, page)
	}
	for _, want := range []string{"<code>" + self + "</code>", "<code>" + other + "</code>", host.NodeVersion(), forge.GrainKind, hash[:12]} {
		if !strings.Contains(page, want) {
			t.Errorf("/cluster does not show %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "did not answer") {
		t.Errorf("a member did not answer:\n%s", page)
	}
	code, page = ops.get("/procs?node=" + url.QueryEscape(other))
	if code != http.StatusOK || !strings.Contains(page, "<strong>"+memberWorker+"</strong>") || strings.Contains(page, "<td>console</td>") {
		t.Errorf("the member process's processes (its worker, not this node's console session): %d\n%s", code, page)
	}
	if code, page := ops.get("/procs"); code != http.StatusOK || strings.Contains(page, memberWorker) {
		t.Errorf("this node's processes show the other member's: %d\n%s", code, page)
	}
	if code, page := ops.get("/procs?node=127.0.0.1:1"); code != http.StatusNotFound || !strings.Contains(page, "not a member") {
		t.Errorf("/procs of an address that is no member: %d, want 404\n%s", code, page)
	}
}

// A member process that stops answering (SIGSTOP) is shown as such, never
// hidden: its Processes page says it did not answer (502) or, once this
// node has dropped it, that it is no member alive (404); and the Cluster
// page then lists it as not answering or among the members that left or
// died.
func TestSilentMemberIsShown(t *testing.T) {
	rt, ts, mp := clusterOfTwo(t)
	ops := login(t, ts, mint(rt, "ops", capability.Grant{Right: capability.Read}))
	t.Cleanup(func() { _ = mp.cmd.Process.Signal(syscall.SIGCONT) }) // before its stdin closes: it must run to end
	// Every thread stopped: it answers nothing from here on.
	testutil.Pause(t, mp.cmd.Process.Pid)
	code, page := ops.get("/procs?node=" + url.QueryEscape(mp.addr))
	t.Logf("the paused member's processes: %d", code)
	switch {
	case code == http.StatusBadGateway && strings.Contains(page, `id="no-answer"`) && strings.Contains(page, mp.addr):
	case code == http.StatusNotFound && strings.Contains(page, "not a member this node sees alive"):
	default:
		t.Errorf("the paused member's processes: %d, want 502 (did not answer) or 404 (dropped)\n%s", code, page)
	}
	code, page = ops.get("/cluster")
	silent := false
	if _, row, ok := strings.Cut(page, `data-node="`+mp.addr+`"`); ok {
		row, _, _ = strings.Cut(row, "</tr>")
		silent = strings.Contains(row, "did not answer")
	}
	if _, gone, ok := strings.Cut(page, "Left or died"); ok && strings.Contains(gone, mp.addr) {
		silent = true
	}
	if code != http.StatusOK || !silent {
		t.Errorf("the Cluster page does not show the paused member %s as silent or gone: %d\n%s", mp.addr, code, page)
	}
}
