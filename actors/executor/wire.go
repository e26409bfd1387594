package executor

import (
	"encoding/json"
	"time"

	"github.com/agentos-run/agentos/actors/executor/internal/workerside"
	"github.com/agentos-run/agentos/actors/executor/worker/cgoworker"
	"github.com/agentos-run/agentos/journal"
)

// The frame protocol between the parent and a worker lives in workerside,
// which a worker links without the actor system (cmd/agentos-worker); the
// parent's side names it here.
type (
	frame   = workerside.Frame
	answer  = workerside.Answer
	pinPlan = workerside.PinPlan
)

var (
	writeFrame      = workerside.WriteFrame
	readFrame       = workerside.ReadFrame
	readFrameLen    = workerside.ReadFrameLen
	readFrameBody   = workerside.ReadFrameBody
	errFrameTooBig  = workerside.ErrFrameTooBig
	errMalformed    = workerside.ErrMalformed
	errFrameRefused = workerside.ErrFrameRefused
)

const (
	maxAnswerBytes = workerside.MaxAnswerBytes
	maxFrame       = workerside.MaxFrame
	envWorker      = workerside.EnvWorker
	envMemory      = workerside.EnvMemory
	envConfine     = workerside.EnvConfine
	exitConfine    = workerside.ExitConfine
)

// timeAfter is time.AfterFunc, named for readability at call sites.
var timeAfter = time.AfterFunc

// planOf is the pin plan of a run that pins in a worker, following rec
// when set.
func planOf(rec *journal.Replayer) *pinPlan {
	p := &pinPlan{}
	if rec == nil {
		return p
	}
	p.Follows = true
	for seq := uint64(1); ; seq++ {
		has, within := rec.Recorded(seq)
		if !within {
			return p
		}
		if has {
			p.Held = append(p.Held, seq)
		}
	}
}

// IsWorker reports whether this process was started as a sandbox worker.
func IsWorker() bool { return workerside.IsWorker() }

// WorkerMain serves as a sandbox worker and exits if this process was started
// as one; otherwise it returns at once. Programs that run tools with
// IsolationProcess MUST call it first thing in main (tests: in TestMain).
func WorkerMain() {
	workerside.Main(workerside.Options{Restrict: cgoworker.Restrict, Probe: testEscape})
}

// testEscape, set only by tests, runs in the worker right after it is
// confined and its result is sent to the parent in a "probe" frame: it
// stands for code that escaped goja.
var testEscape func() json.RawMessage
