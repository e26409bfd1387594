package kerneltools_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
)

// The process-table helpers the node's tests share with actors/kernel's.

var quiet = slog.New(slog.DiscardHandler)

func newKernel(t testing.TB, opts kernel.Options) *kernel.Kernel {
	t.Helper()
	k, err := kernel.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := k.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return k
}

func spawn(t testing.TB, k *kernel.Kernel, main kernel.Main, opts kernel.SpawnOptions) *kernel.Process {
	t.Helper()
	p, err := k.Spawn(main, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func wait(t testing.TB, p *kernel.Process) kernel.Reason {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("process %v did not end: %v", p.PID(), err)
	}
	return r
}

func block(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }
