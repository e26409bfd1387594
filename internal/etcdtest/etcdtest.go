// Package etcdtest starts a throwaway etcd server for tests, on loopback
// free ports, in a temporary directory. A test that needs one is skipped,
// saying why, where etcd is not installed.
package etcdtest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Start runs an etcd server for the rest of t and returns its client URL
// (http://127.0.0.1:<port>).
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not installed on this machine (no etcd on PATH): install the etcd-server package to run this test")
	}
	dir := t.TempDir()
	client, peer := freePort(t), freePort(t)
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	var out syncBuffer
	cmd := exec.Command(bin,
		"--name", "etcdtest",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "etcdtest="+peerURL,
		"--log-level", "error")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcdtest: starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	for i := 0; i < 200; i++ { // 20 s at most
		select {
		case <-exited:
			t.Fatalf("etcdtest: etcd exited at start:\n%s", out.String())
		default:
		}
		if resp, err := hc.Get(clientURL + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return clientURL
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("etcdtest: etcd did not become healthy in 20 s:\n%s", out.String())
	return ""
}

// freePort returns a loopback port free at the time of the call.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer collects the server's output for an error message.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
