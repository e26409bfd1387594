package kerneltools_test

import (
	"context"
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/vfs"
)

// newTelemetry (telemetry.go) appends to k.hooks without synchronization,
// while emit (events.go) ranges over k.hooks on every kernel event. Boot
// accepts a caller's Kernel (Options.Kernel) that may already run
// processes, so booting races with them. Fails under -race.
func TestBootOnARunningKernelDoesNotRace(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	started := make(chan struct{})
	spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
		close(started)
		for ctx.Err() == nil {
			_ = p.Charge(capability.LLMTokens, 1) // each charge emits an event
		}
		return nil
	}, kernel.SpawnOptions{})
	<-started
	bootWith(t, k)
}

// bootWith is boot (node_test.go) over an existing kernel.
func bootWith(t *testing.T, k *kernel.Kernel) *host.BootedNode {
	t.Helper()
	root := t.TempDir()
	ex, err := executor.New(executor.Options{Root: root, Isolation: executor.IsolationInProcess, Workers: 1, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	jail, err := vfs.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	n, err := host.BootNode(context.Background(), host.NodeOptions{Options: kerneltools.Options{Kernel: k, Jail: jail, Logger: quiet}, Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Close(context.Background())
		ex.Close()
		jail.Close()
	})
	return n
}
