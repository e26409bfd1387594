package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/loopport"
)

// 'cluster status', 'ps --cluster' and 'events --cluster' on a node of a
// (one-node) cluster, and what they say on a node in no cluster.
func TestClusterCommands(t *testing.T) {
	if raceEnabled {
		t.Skip("not under -race: protoactor's cluster races internally (docs/CLUSTER.md)")
	}
	root := toolRoot(t, nil)
	bare := t.TempDir() + "/tools.git"
	if err := repo.InitBare(bare, "main"); err != nil {
		t.Fatal(err)
	}
	ports, err := loopport.Reserve(1) // below port 0's range: nobody takes it before the node binds it
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]
	t.Setenv("CLI_CLUSTER_KEY", hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	cfg := host.Config{Root: root, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler),
		Git:         host.GitConfig{Upstream: bare},
		Capability:  host.CapabilityConfig{SigningKeyEnv: "CLI_CLUSTER_KEY"},
		Cluster:     host.ClusterConfig{Enabled: true, Name: "cli", Seeds: []string{fmt.Sprintf("127.0.0.1:%d", port)}, HealthPort: port, InsecureLoopback: true},
		MetricsAddr: "127.0.0.1:0"}
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx) }()
	defer func() { cancel(); <-served }()
	waitListening(t, root, 10*time.Second)
	if err := rt.Member().WaitMembers(ctx, 1); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := cli(t, "cluster", "status", "--root", root, "--json")
	var rep host.ClusterReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Cluster != "cli" || len(rep.Members) != 1 || rep.Members[0].Root != root ||
		rep.Members[0].Version == "" || rep.Members[0].Version != host.NodeVersion() {
		t.Fatalf("cluster status --json: %d %s %s", code, stdout, stderr)
	}
	// The probes next to the metrics: live, and ready once a member.
	for _, path := range []string{host.HealthzPath, host.ReadyzPath} {
		u := strings.TrimSuffix(rt.MetricsURL(), "/metrics") + path
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Fatalf("GET %s: %d %q", u, res.StatusCode, body)
		}
	}
	code, stdout, _ = cli(t, "cluster", "status", "--root", root)
	if code != 0 || !strings.Contains(stdout, `cluster cli, seen from `+rt.Member().Address()+`: 1 member(s) alive`) || !strings.Contains(stdout, "forge") ||
		!strings.Contains(stdout, "VERSION") || !strings.Contains(stdout, host.NodeVersion()) {
		t.Fatalf("cluster status: %d %s", code, stdout)
	}
	code, stdout, _ = cli(t, "ps", "--cluster", "--root", root, "--json")
	var ps struct {
		Processes []struct {
			Node string `json:"node"`
			Name string `json:"name"`
		} `json:"processes"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &ps) != nil || len(ps.Processes) != 1 || ps.Processes[0].Node != rt.Member().Address() || ps.Processes[0].Name != "agent" {
		t.Fatalf("ps --cluster --json: %d %s", code, stdout)
	}
	code, stdout, _ = cli(t, "events", "--cluster", "--root", root)
	if code != 0 || !strings.HasPrefix(stdout, "NODE") || !strings.Contains(stdout, rt.Member().Address()) || !strings.Contains(stdout, "spawn") {
		t.Fatalf("events --cluster: %d %s", code, stdout)
	}
	if code, _, stderr := cli(t, "cluster", "--root", root); code != 2 || !strings.Contains(stderr, "cluster status") {
		t.Fatalf("cluster without a subcommand: %d %s", code, stderr)
	}
}

// On a node in no cluster the cluster commands say how to start one.
func TestClusterCommandsAlone(t *testing.T) {
	root := toolRoot(t, nil)
	rt, err := host.Start(context.Background(), host.Config{Root: root, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx) }()
	defer func() { cancel(); <-served }()
	waitListening(t, root, 10*time.Second)
	for _, args := range [][]string{{"cluster", "status"}, {"ps", "--cluster"}, {"events", "--cluster"}} {
		code, _, stderr := cli(t, append(args, "--root", root)...)
		if code != 1 || !strings.Contains(stderr, "serve --cluster") {
			t.Errorf("%v on a node in no cluster: %d %s", args, code, stderr)
		}
	}
}

// 'agentos cluster certs' makes a CA once and member certificates that a
// clustered node accepts; it never overwrites one and says what is wrong.
func TestClusterCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	code, stdout, stderr := cli(t, "cluster", "certs", "--dir", dir, "--node", "n1,n2", "--json")
	var rep struct {
		CA     string `json:"ca"`
		CAMade bool   `json:"ca_made"`
		Nodes  []struct{ Name, Cert, Key string }
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || !rep.CAMade || len(rep.Nodes) != 2 {
		t.Fatalf("certs: %d %s %s", code, stdout, stderr)
	}
	for _, n := range rep.Nodes {
		if fi, err := os.Stat(n.Key); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", n.Key, fi.Mode(), err)
		}
	}
	code, stdout, _ = cli(t, "cluster", "certs", "--dir", dir, "--node", "n3")
	if code != 0 || !strings.Contains(stdout, "used the cluster's CA") {
		t.Fatalf("second run: %d %s", code, stdout)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--dir", dir, "--node", "n1"}, 1, "never overwritten"},
		{[]string{"--node", "x"}, 2, "needs --dir"},
		{[]string{"--dir", dir, "--node", "a/b"}, 1, "member name"},
		{[]string{"--dir", dir, "--days", "0"}, 2, "--days"},
	} {
		code, _, stderr := cli(t, append([]string{"cluster", "certs"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: %d %s, want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
