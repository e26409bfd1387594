package system_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/system"
	"github.com/asynkron/protoactor-go/actor"
)

// TestAsk: a reply comes back; an actor that never answers gives
// ErrNoReply after the timeout; ctx's end returns at once with ctx's error,
// before and after sending; a ctx deadline shorter than the timeout bounds
// the wait.
func TestAsk(t *testing.T) {
	s := system.New(system.Options{})
	defer func() { _ = s.Shutdown(5 * time.Second) }()
	echoPID := s.Spawn(echo)
	silent := s.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	root := s.Root()

	if res, err := system.Ask(context.Background(), root, echoPID, "ping", 5*time.Second); err != nil || res != "pong" {
		t.Fatalf("echo: %v, %v", res, err)
	}
	if _, err := system.Ask(context.Background(), root, silent, "hi", 50*time.Millisecond); !errors.Is(err, system.ErrNoReply) {
		t.Fatalf("a silent actor: %v, want ErrNoReply", err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := system.Ask(done, root, echoPID, "hi", 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended ctx: %v, want context.Canceled", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }() // ends while Ask waits
	start := time.Now()
	if _, err := system.Ask(ctx, root, silent, "hi", 300*time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Fatalf("ctx cancelled while waiting: %v, want context.Canceled", err)
	}
	time.Sleep(300*time.Millisecond - time.Since(start)) // the abandoned wait ends with its timeout (goleak)
	short, cancelShort := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancelShort()
	if _, err := system.Ask(short, root, silent, "hi", time.Hour); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, system.ErrNoReply) {
		t.Fatalf("a ctx deadline: %v, want the deadline or ErrNoReply", err)
	}
}
