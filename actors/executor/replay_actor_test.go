package executor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/journal"
)

// A replay asked of the executor actor through its client (how the
// registration gate replays) gives what ReplayWith gives on the executor
// itself, offline: the patched result, the divergence with its code, run
// and sequence number, and the timeout cap the gate sets.
func TestReplayThroughTheActor(t *testing.T) {
	const buggy = `/** Total of an order: price times quantity (buggy: adds). */
export default async function (args: { item: string; qty: number }) {
  const text = await tgp.get('/' + args.item);
  const price = Number(text.split(' ').pop());
  return price + args.qty;
}
`
	e := newRecEnv(t, journal.GroupCommit, map[string]string{"tools/total.ts": buggy})
	_, id := e.exec(t, "tools/total.ts", `{"item": "tea", "qty": 3}`)
	c := startActor(t, e.ex, ActorOptions{Journal: e.j})
	hits := e.hits.Load()
	ctx := context.Background()

	fixed := strings.Replace(buggy, "price + args.qty", "price * args.qty", 1)
	rep, err := c.Replay(ctx, id, execclient.ReplayOptions{Patched: []byte(fixed)})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Patched || rep.Same || rep.Divergence != nil || string(rep.Result.Result) != "21" || !rep.Result.Success {
		t.Fatalf("patched replay through the actor: %+v", rep)
	}
	if rep, err := c.Replay(ctx, id, execclient.ReplayOptions{}); err != nil || !rep.Same || rep.Patched || string(rep.Result.Result) != "10" {
		t.Fatalf("replay of the recorded source through the actor: %+v, %v", rep, err)
	}
	if e.hits.Load() != hits {
		t.Fatal("a replay through the actor reached the web server")
	}

	other := strings.Replace(buggy, "'/' + args.item", "'/coffee'", 1)
	rep, err = c.Replay(ctx, id, execclient.ReplayOptions{Patched: []byte(other)})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := ReplayWith(ctx, e.ex, e.j, id, execclient.ReplayOptions{Patched: []byte(other)})
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Divergence; d == nil || *d != *direct.Divergence || d.Code != journal.CodeRequestDiffers || d.Seq != 1 || d.RunID != id {
		t.Fatalf("divergence through the actor %+v, want %+v", rep.Divergence, direct.Divergence)
	}
	if rep.Result.Error == nil || rep.Result.Error.Kind != direct.Result.Error.Kind || rep.Result.Error.Message != direct.Result.Error.Message {
		t.Fatalf("the diverging replay's error %+v, want %+v", rep.Result.Error, direct.Result.Error)
	}

	// The gate's cap: a run recorded under the default timeout (5s)
	// replays under MaxTimeout, and the note says so; a cap above the
	// run's timeout changes nothing.
	rep, err = c.Replay(ctx, id, execclient.ReplayOptions{MaxTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Limits.Timeout != time.Second || !strings.Contains(rep.LimitsNote, "timeout overridden: 1s") {
		t.Fatalf("capped replay ran under %v (%q), want 1s and a note", rep.Limits.Timeout, rep.LimitsNote)
	}
	if rep, err := c.Replay(ctx, id, execclient.ReplayOptions{MaxTimeout: time.Hour}); err != nil || rep.Limits.Timeout != e.ex.Options().Limits.Timeout || rep.LimitsNote != "" {
		t.Fatalf("a cap above the run's timeout: %v (%q), %v", rep.Limits.Timeout, rep.LimitsNote, err)
	}
}

// A Replay the actor cannot serve fails with an error saying why: a run
// that does not exist, an actor without a journal (ErrNoJournal), a
// sender on another node (replays are local only).
func TestReplayThroughTheActorRefused(t *testing.T) {
	e := newRecEnv(t, journal.GroupCommit, map[string]string{"tools/a.ts": "export default () => 1;\n"})
	_, id := e.exec(t, "tools/a.ts", `{}`)
	ctx := context.Background()
	c := startActor(t, e.ex, ActorOptions{Journal: e.j})
	if _, err := c.Replay(ctx, "no-such-run", execclient.ReplayOptions{}); err == nil || errors.Is(err, execclient.ErrUnavailable) || !strings.Contains(err.Error(), "no-such-run") {
		t.Fatalf("replay of an unknown run: %v, want an error naming it", err)
	}
	if _, err := startActor(t, e.ex, ActorOptions{}).Replay(ctx, id, execclient.ReplayOptions{}); !errors.Is(err, execclient.ErrNoJournal) {
		t.Fatalf("replay on an actor without a journal: %v, want ErrNoJournal", err)
	}
	// A Replay not wrapped as local (what arrives from another node).
	res, err := c.Root.RequestFuture(c.PID, &pb.Replay{RunId: id}, time.Minute).Result()
	if err != nil {
		t.Fatal(err)
	}
	if f := res.(*pb.Replayed).GetFailure(); f.GetCode() != system.CodeUnauthenticated {
		t.Fatalf("a remote Replay: %v, want refused (%s)", res, system.CodeUnauthenticated)
	}
}
