package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/admin"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// 'agentos serve --metrics ADDR', as a real process: it prints where the
// metrics are, and the same exposition (parsed with the Prometheus text
// parser) is served there and at GET /metrics on the node socket, counting
// the calls made through the node.
func TestServeMetrics(t *testing.T) {
	root := toolRoot(t, nil)
	cmd := exec.Command(os.Args[0], "serve", "--root", root, "--metrics", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	urlRe := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	var url string
	deadline := time.Now().Add(30 * time.Second) // a bound against hanging, not a timing assertion
	for {
		if m := urlRe.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no metrics URL:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// serve prints the metrics URL before its node socket listens
	// (rt.Serve): wait for the socket rather than race it.
	waitListening(t, root, 30*time.Second)
	c, err := admin.Dial(root)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(context.Background(), "list_files", json.RawMessage(`{"dir":"tools"}`)); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(root, admin.Socket)
	overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	defer overSocket.CloseIdleConnections()
	for _, s := range []struct {
		name string
		hc   *http.Client
		url  string
	}{{"metrics_addr", http.DefaultClient, url}, {"node socket", overSocket, "http://node/metrics"}} {
		resp, err := s.hc.Get(s.url)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s, the exposition does not parse: %v", s.name, resp.Status, err)
		}
		found := false
		if f := fams["agentos_kernel_calls_total"]; f != nil && f.GetType() == dto.MetricType_COUNTER {
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				found = found || labels["tool"] == "list_files" && labels["outcome"] == "ok" && m.GetCounter().GetValue() == 1
			}
		}
		if !found {
			t.Errorf("%s: no agentos_kernel_calls_total{tool=list_files,outcome=ok} 1 in %v", s.name, fams["agentos_kernel_calls_total"])
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("%s still answers after the node stopped", url)
	}
}
