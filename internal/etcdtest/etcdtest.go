// Package etcdtest starts a throwaway etcd server for tests, on loopback
// free ports, in a temporary directory. A test that needs one is skipped,
// saying why, where etcd is not installed.
package etcdtest

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/loopport"
)

// Start runs an etcd server for the rest of t and returns its client URL
// (http://127.0.0.1:<port>).
func Start(t testing.TB) string {
	t.Helper()
	return New(t).URL
}

// Server is an etcd server that a fault test can stop and start again on
// the same ports and data (an etcd outage).
type Server struct {
	URL string // the client URL, http://127.0.0.1:<port>

	bin, dir, peerURL string
	out               syncBuffer
	cmd               *exec.Cmd
	exited            chan struct{}
}

// New runs an etcd server for the rest of t.
func New(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not installed on this machine (no etcd on PATH): install the etcd-server package to run this test")
	}
	s := &Server{bin: bin, dir: t.TempDir(),
		URL:     fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
		peerURL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}
	t.Cleanup(s.kill)
	s.Restart(t)
	return s
}

// Restart starts the stopped server again on the same ports and data and
// returns once it is healthy.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.cmd != nil {
		t.Fatal("etcdtest: Restart of a running server: Stop it first")
	}
	cmd := exec.Command(s.bin,
		"--name", "etcdtest",
		"--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", s.URL, "--advertise-client-urls", s.URL,
		"--listen-peer-urls", s.peerURL, "--initial-advertise-peer-urls", s.peerURL,
		"--initial-cluster", "etcdtest="+s.peerURL,
		"--log-level", "error")
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcdtest: starting %s: %v", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	for i := 0; i < 200; i++ { // 20 s at most
		select {
		case <-exited:
			t.Fatalf("etcdtest: etcd exited at start:\n%s", s.out.String())
		default:
		}
		if resp, err := hc.Get(s.URL + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("etcdtest: etcd did not become healthy in 20 s:\n%s", s.out.String())
}

// Stop kills the server (SIGKILL: an outage, not a clean stop) and waits
// for it to exit. Restart starts it again.
func (s *Server) Stop() {
	s.kill()
	s.cmd = nil
}

// Pause stops the server without ending it (SIGSTOP: a hung etcd, a
// paused VM, etcd cut off from every member). Its time keeps running:
// when Resume continues it, leases not kept alive meanwhile have expired.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("etcdtest: pausing etcd: %v", err)
	}
}

// Resume continues a paused server.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatalf("etcdtest: resuming etcd: %v", err)
	}
}

func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT) // a paused one dies at once
	<-s.exited
}

// freePort returns a loopback port free at the time of the call, drawn
// where no concurrent test's port 0 lands (loopport) before etcd binds it.
func freePort(t testing.TB) int {
	t.Helper()
	ports, err := loopport.Reserve(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
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
