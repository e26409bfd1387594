package git

// A write the registration gate must judge is not judged on the actor's
// goroutine: the gate replays recorded runs, which takes seconds, and the
// git actor is the tool root's single writer. The actor starts the check
// on a goroutine of its own and goes on serving its other messages; the
// verdict comes back to it as a gated message, and the write continues
// there. The writes sent meanwhile wait in a queue, in order, so that
// writes are still applied one at a time in the order they came, each
// gated against the version before it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	gitclient "github.com/agentos-run/agentos/actors/git/client"
	pb "github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/transpile"
)

// writePlan is one write, read and ready: the file, its previous content
// (nil when unknown) and the new one.
type writePlan struct {
	p            string
	old, content []byte
	created      bool
	verb         string // "write" or "patch", for the commit message
	trailer      string // ends the commit message (a forge's fence)
}

// pendingWrite is a WriteFile or PatchFile and whom to answer.
type pendingWrite struct {
	to  *actor.PID
	msg proto.Message
	pl  writePlan // while its gate check runs
}

// gated is the gate's verdict on the write being gated: the actor's own
// message, sent by the goroutine that ran the check.
type gated struct {
	w   *pendingWrite
	rep gate.Report
}

// enqueue starts a write, or queues it behind the write being gated.
func (a *gitActor) enqueue(ctx actor.Context, m proto.Message) {
	w := &pendingWrite{to: ctx.Sender(), msg: m}
	if a.gating != nil {
		a.queue = append(a.queue, w)
		return
	}
	a.start(ctx, w)
	a.drain(ctx)
}

// drain starts the queued writes while none is being gated.
func (a *gitActor) drain(ctx actor.Context) {
	for a.gating == nil && len(a.queue) > 0 {
		w := a.queue[0]
		a.queue[0] = nil
		a.queue = a.queue[1:]
		a.start(ctx, w)
	}
}

// start plans w and either finishes it or, when the gate must judge it,
// starts the gate's check and leaves it in a.gating.
func (a *gitActor) start(ctx actor.Context, w *pendingWrite) {
	var pl writePlan
	var fail *pb.Written
	switch m := w.msg.(type) {
	case *pb.WriteFile:
		pl, fail = a.planWrite(m)
	case *pb.PatchFile:
		pl, fail = a.planPatch(m)
	}
	if fail != nil {
		a.finish(ctx, w, fail)
		return
	}
	if a.opts.Gate == nil || !gate.Applies(pl.p, pl.old, pl.content) || Compiles(pl.p, pl.content) != nil {
		a.finish(ctx, w, a.persist(pl, nil))
		return
	}
	w.pl = pl
	a.gating = w
	gctx, cancel := context.WithTimeout(context.Background(), a.opts.PersistTimeout)
	a.gateCancel = cancel
	root, self, g := ctx.ActorSystem().Root, ctx.Self(), a.opts.Gate
	go func() {
		rep := g.Check(gctx, pl.p, pl.old, pl.content)
		root.Send(self, &gated{w: w, rep: rep})
	}()
}

// onGated continues the gated write with the gate's verdict: refused when
// the report is blocked, else written. A file that changed while the gate
// ran (a pull brought another version) is planned and gated again.
func (a *gitActor) onGated(ctx actor.Context, m *gated) {
	w := m.w
	if a.gating != w {
		return // answered already (the actor stopped)
	}
	a.gating = nil
	a.gateCancel()
	if cur, err := a.opts.Jail.ReadFile(w.pl.p); err != nil || !bytes.Equal(cur, w.pl.old) {
		a.start(ctx, w)
		a.drain(ctx)
		return
	}
	report, _ := json.Marshal(m.rep)
	if err := m.rep.Err(); err != nil {
		a.log().Warn("git: the registration gate refused a write", slog.String("path", w.pl.p), slog.Any("changed", m.rep.Changed()))
		a.finish(ctx, w, &pb.Written{Path: w.pl.p, Hash: transpile.Hash(w.pl.content), Gate: report, Failure: gitclient.FailureOf(err)})
	} else {
		a.finish(ctx, w, a.persist(w.pl, report))
	}
	a.drain(ctx)
}

// finish answers w and the waiters its write satisfied (a write may have
// rebased on newer upstream commits).
func (a *gitActor) finish(ctx actor.Context, w *pendingWrite, reply *pb.Written) {
	if w.to != nil {
		ctx.Send(w.to, reply)
	}
	a.resolve(ctx)
}

// dropWrites answers the write being gated and the queued ones when the
// actor stops: nothing of them was written.
func (a *gitActor) dropWrites(ctx actor.Context) {
	ws := a.queue
	if a.gating != nil {
		a.gateCancel()
		ws = append([]*pendingWrite{a.gating}, ws...)
	}
	a.gating, a.queue = nil, nil
	for _, w := range ws {
		p := ""
		if m, ok := w.msg.(interface{ GetPath() string }); ok {
			p = m.GetPath()
		}
		if w.to != nil {
			ctx.Send(w.to, &pb.Written{Path: p, Failure: gitclient.FailureOf(fmt.Errorf("%w: the git actor stopped before writing %s; nothing was written: send the write again", gitclient.ErrUnavailable, p))})
		}
	}
}
