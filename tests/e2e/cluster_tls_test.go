package e2e_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/cluster"
	"github.com/agentos-run/agentos/internal/etcdtest"
	"github.com/agentos-run/agentos/internal/host"
)

// A clustered node without certificates refuses to start unless its
// config says insecure_loopback and every address is a loopback one; the
// error says what to set.
func TestClusterPlaintextRefusedAtStart(t *testing.T) {
	t.Setenv("TEST_CLUSTER_KEY", hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	bare := upstream(t)
	for _, tc := range []struct {
		name  string
		tweak func(*host.ClusterConfig)
		want  string
	}{
		{"no certificate, not said", func(c *host.ClusterConfig) {}, "cluster.insecure_loopback"},
		{"said, but bound on every interface", func(c *host.ClusterConfig) { c.InsecureLoopback, c.Host = true, "0.0.0.0" }, `"0.0.0.0" is not a loopback address`},
		{"said, but a seed on the network", func(c *host.ClusterConfig) {
			c.InsecureLoopback, c.Seeds = true, []string{"192.0.2.7:6330"}
		}, `"192.0.2.7" is not a loopback address`},
		{"certificate without its key", func(c *host.ClusterConfig) { c.Cert, c.CA = "node.crt", "ca.crt" }, "cluster.cert, cluster.key and cluster.ca go together"},
		{"key inside the tool root", func(c *host.ClusterConfig) {
			c.Cert, c.Key, c.CA = "/etc/agentos/n.crt", "certs/n.key", "/etc/agentos/ca.crt"
		}, "is inside the tool root, whose files are committed to the Git upstream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := host.Init(dir, host.InitOptions{Upstream: bare}); err != nil {
				t.Fatal(err)
			}
			cfg, err := host.LoadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Root, cfg.Isolation, cfg.Logger = dir, "inprocess", quiet
			cfg.Capability.SigningKeyEnv = "TEST_CLUSTER_KEY"
			cfg.Cluster = host.ClusterConfig{Enabled: true, Name: "refused"}
			tc.tweak(&cfg.Cluster)
			rt, err := host.Start(context.Background(), cfg)
			if err == nil {
				rt.Close()
				t.Fatal("started")
			}
			if rt != nil {
				rt.Close()
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// Nodes with certificates from one CA form a cluster through etcd over
// mutual TLS, and each answers /healthz and /readyz (ready: listed by its
// provider) next to its metrics.
func TestClusterTLSThroughEtcdReady(t *testing.T) {
	endpoint := etcdtest.Start(t)
	certs := t.TempDir()
	if _, err := cluster.MakeCA(certs, "t", time.Hour); err != nil {
		t.Fatal(err)
	}
	n := 0
	rts := testCluster(t, 2, upstream(t), "http://127.0.0.1:1", func(c *host.Config) {
		n++
		cert, key, err := cluster.MakeMemberCert(certs, fmt.Sprintf("node%d", n), nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c.Cluster.Provider, c.Cluster.Seeds, c.Cluster.HealthPort, c.Cluster.InsecureLoopback = "etcd", nil, 0, false
		c.Cluster.Etcd = host.EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/" + t.Name()}
		c.Cluster.Cert, c.Cluster.Key, c.Cluster.CA = cert, key, filepath.Join(certs, cluster.CACertFile)
		c.MetricsAddr = "127.0.0.1:0"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, rt := range rts {
		rep, err := rt.ClusterReport(ctx)
		if err != nil || len(rep.Members) != 2 {
			t.Fatalf("node %d: %+v %v", i+1, rep, err)
		}
		for _, m := range rep.Members {
			if m.Error != "" || m.Version == "" {
				t.Fatalf("node %d: member %+v", i+1, m)
			}
		}
		for _, path := range []string{host.HealthzPath, host.ReadyzPath} {
			u := strings.TrimSuffix(rt.MetricsURL(), "/metrics") + path
			res, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d %s", u, res.StatusCode, body)
			}
		}
	}
}
