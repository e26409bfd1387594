package journal

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/agentos-run/agentos/driver"
)

// Replayer answers a run's calls from its recording.
type Replayer struct {
	j       *Journal
	meta    RunMeta
	entries map[uint64]*Entry
	last    uint64 // the highest recorded seq

	mu   sync.Mutex
	used map[uint64]bool
	div  *DivergenceError // the first divergence

	// scope holds the secrets the replayed run found, as its recording
	// did: live requests are redacted with them before they are compared.
	scope *secretSet
}

// Replayer loads the recording of run id (a unique prefix will do).
func (j *Journal) Replayer(id string) (*Replayer, error) {
	meta, err := j.Get(id)
	if err != nil {
		return nil, err
	}
	entries, err := j.Entries(meta.ID)
	if err != nil {
		return nil, err
	}
	p := &Replayer{j: j, meta: meta, entries: make(map[uint64]*Entry, len(entries)), used: map[uint64]bool{}, scope: &secretSet{}}
	for i := range entries {
		e := &entries[i]
		e.Request = j.redact.json(e.Request) // canonical, whatever wrote it
		p.entries[e.Seq] = e
		p.last = max(p.last, e.Seq)
	}
	return p, nil
}

// Meta returns the recorded run's metadata.
func (p *Replayer) Meta() RunMeta { return p.meta }

// Middleware answers every call from the recording and never calls the
// wrapped Host: no device is touched, except for a sealed answer (a secret
// file's content, see Options.Seal), which is read again through it and
// checked against its recorded hash. A call that diverges aborts the run
// (the tool cannot catch it) with the divergence's message.
func (p *Replayer) Middleware() driver.Middleware {
	return func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			return p.answer(ctx, c, next)
		})
	}
}

// answer serves c from the recording, or reports the divergence.
func (p *Replayer) answer(ctx context.Context, c driver.Call, next driver.Host) (json.RawMessage, error) {
	e, ok := p.entries[c.Seq]
	if !ok {
		return nil, p.diverge(&DivergenceError{Code: CodeBeyondEnd, RunID: p.meta.ID, Seq: c.Seq, Actual: p.render(c)})
	}
	// Both sides redacted alike: the recording was redacted with the
	// secrets the run had found so far, the live call is redacted with the
	// ones the replay has found (the same ones, found the same way).
	if e.Driver != c.Driver || e.Op != c.Op || (!bytes.Equal(e.Request, c.Request) && !bytes.Equal(p.j.redact.jsonIn(e.Request, p.scope), p.j.redact.jsonIn(c.Request, p.scope))) {
		return nil, p.diverge(&DivergenceError{Code: CodeRequestDiffers, RunID: p.meta.ID, Seq: c.Seq, Expected: e.call(), Actual: p.render(c)})
	}
	if e.Sealed != "" && e.Error == nil {
		return p.unseal(ctx, c, e, next)
	}
	p.mu.Lock()
	p.used[c.Seq] = true
	p.mu.Unlock()
	if e.Error != nil {
		return nil, e.Error
	}
	return e.Response, nil
}

// unseal answers a sealed call by making it again, live, and checking the
// answer against the recorded hash: the journal never kept the secret.
func (p *Replayer) unseal(ctx context.Context, c driver.Call, e *Entry, next driver.Host) (json.RawMessage, error) {
	var val json.RawMessage
	err := fmt.Errorf("no device to read it from")
	if next != nil {
		val, err = next.Do(ctx, c)
	}
	switch {
	case err != nil:
		return nil, p.diverge(&DivergenceError{Code: CodeSealed, RunID: p.meta.ID, Seq: c.Seq, Expected: e.call(),
			Actual: fmt.Sprintf("it cannot be read now: %s", p.j.redact.textIn(err.Error(), p.scope))})
	case sealOf(val) != e.Sealed:
		return nil, p.diverge(&DivergenceError{Code: CodeSealed, RunID: p.meta.ID, Seq: c.Seq, Expected: e.call(),
			Actual: fmt.Sprintf("it changed since the run (%.19s then, %.19s now)", e.Sealed, sealOf(val))})
	}
	p.scope.addContent(val)
	p.mu.Lock()
	p.used[c.Seq] = true
	p.mu.Unlock()
	return val, nil
}

// Redact scrubs a document the way the recorded run's result was scrubbed
// (with the secrets this replay has found so far), so that a replayed
// result can be compared with the recorded one.
func (p *Replayer) Redact(raw json.RawMessage) json.RawMessage {
	return p.j.redact.jsonIn(raw, p.scope)
}

func (p *Replayer) render(c driver.Call) string {
	return fmt.Sprintf("%s.%s %s", c.Driver, c.Op, p.j.redact.textIn(string(p.j.redact.json(c.Request)), p.scope))
}

func (p *Replayer) diverge(d *DivergenceError) error {
	p.mu.Lock()
	if p.div == nil {
		p.div = d
	}
	p.mu.Unlock()
	return &driver.Error{Code: driver.CodeAbort, Message: d.Error()}
}

// Finish reports the first divergence of the replay: one seen during the run
// or, when the code ended early, the first recorded call it never made
// ([AGENTOS-J003]). It returns nil when the run followed its recording.
func (p *Replayer) Finish() *DivergenceError {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.div != nil {
		return p.div
	}
	for seq := uint64(1); seq <= p.last; seq++ {
		if e, ok := p.entries[seq]; ok && !p.used[seq] {
			p.div = &DivergenceError{Code: CodeUnconsumed, RunID: p.meta.ID, Seq: seq, Expected: e.call()}
			return p.div
		}
	}
	return nil
}

// Recovery resumes an unfinished run: its recorded prefix is answered from
// the journal (nothing is paid for twice), later calls go live and are
// appended to the same run.
type Recovery struct {
	*Replayer
	run *Run
	// Redo, when set, names recorded calls that the resumed run also
	// performs again on the wrapped Host (the tool still gets the recorded
	// answer): state that died with the crashed process, such as the run's
	// /tmp, is rebuilt as it was at the crash. Only calls recorded as
	// successful are redone; a redo that fails aborts the run.
	Redo func(driver.Call) bool
}

// Recover prepares to resume run id. It first claims the run for this
// Journal (see Claim): it fails with ErrClaimed while another live node
// holds it, and with ErrEnded once the run has ended. The resumed run
// writes under the claim's fencing token: a Run of the same run begun or
// recovered before (here or on another node) can no longer write it.
func (j *Journal) Recover(id string) (*Recovery, error) {
	meta, err := j.Get(id)
	if err != nil {
		return nil, err
	}
	fence, ok, err := j.claim(meta.ID, j.owner, j.opts.Lease)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, j.claimedError(meta.ID)
	}
	p, err := j.Replayer(meta.ID)
	if err != nil {
		return nil, err
	}
	return &Recovery{Replayer: p, run: &Run{j: j, meta: p.meta, scope: p.scope, fence: fence}}, nil
}

// Run returns the handle that ends the resumed run.
func (r *Recovery) Run() *Run { return r.run }

// Middleware serves recorded calls from the journal and records the rest.
func (r *Recovery) Middleware() driver.Middleware {
	record := r.run.Middleware()
	return func(next driver.Host) driver.Host {
		live := record(next)
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			e, ok := r.entries[c.Seq]
			if !ok {
				return live.Do(ctx, c)
			}
			val, err := r.answer(ctx, c, next)
			if err == nil && e.Error == nil && r.Redo != nil && r.Redo(c) {
				if _, rerr := next.Do(ctx, c); rerr != nil {
					return nil, driver.Errorf(driver.CodeAbort, "resuming run %s: performing %s again, to rebuild what the crash lost, failed: %v", r.meta.ID, c, rerr)
				}
			}
			return val, err
		})
	}
}

// Diverged returns the first divergence seen while the replayed code ran
// (nil when none), without looking for recorded calls it never made: for a
// replay that stopped early for another reason (a limit), those are not a
// divergence.
func (p *Replayer) Diverged() *DivergenceError {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.div
}

// Answerable returns the recorded calls that may be answered away from the
// Replayer, e.g. inside the sandbox worker that runs the replayed tool,
// without a round trip per call: every entry but the sealed ones (those are
// read again through the device). Their requests are canonical, as
// Middleware compares them.
//
// IMPORTANT: such an answer is the recorded one only for a live call whose
// seq, driver, op and request bytes all equal the entry's; any other call
// MUST go through Middleware, which answers it (redacted comparison) or
// reports the divergence with its code and message. Every seq answered away
// MUST be reported with Consumed before Finish, or Finish reports it as
// never made ([AGENTOS-J003]).
func (p *Replayer) Answerable() []Entry {
	out := make([]Entry, 0, len(p.entries))
	for _, e := range p.entries {
		if e.Sealed == "" {
			out = append(out, *e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// Recorded reports whether the recording holds call seq (has), and whether
// seq is at or before its last recorded call (within): a call within the
// recording that it does not hold was answered without a record (a pinned
// read of the tool tree) when the run was recorded.
func (p *Replayer) Recorded(seq uint64) (has, within bool) {
	_, has = p.entries[seq]
	return has, seq <= p.last
}

// Consumed records that the calls seqs were answered from Answerable's
// entries, as Middleware would have answered them.
func (p *Replayer) Consumed(seqs ...uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range seqs {
		if e, ok := p.entries[s]; ok && e.Sealed == "" {
			p.used[s] = true
		}
	}
}
