package cluster

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestLeaveDoesNotWaitForAPausedPeer: a member leaving while a peer is
// paused (SIGSTOP: it holds its gRPC stream to us open and never answers
// our disconnect) ends within remoteGrace and a margin, without error,
// instead of spending protoactor's 10 s graceful stop (a node's whole
// close budget) on it.
func TestLeaveDoesNotWaitForAPausedPeer(t *testing.T) {
	lns, all := reserve(t, 2)
	m, err := Join(context.Background(), Options{InsecureLoopback: true, Name: "leave-paused", Seeds: all, HealthListener: lns[0],
		RefreshInterval: 200 * time.Millisecond, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "fenced", all, lns[1], childName+"=leave-paused")
	waitAll(t, []*Member{m}, 2)
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cmd.Process.Signal(syscall.SIGCONT) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t0 := time.Now()
	err = m.Leave(ctx)
	took := time.Since(t0)
	if err != nil {
		t.Errorf("leave with a paused peer: %v", err)
	}
	if limit := remoteGrace + 2*time.Second; took > limit {
		t.Errorf("leave with a paused peer took %v, want at most %v", took.Round(time.Millisecond), limit)
	}
	t.Logf("leave with a paused peer took %v", took.Round(time.Millisecond))
}
