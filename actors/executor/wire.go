package executor

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentos-run/agentos/actors/executor/internal/confine"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/driver"
)

// The parent and a worker exchange frames over the worker's stdin (parent to
// worker) and stdout (worker to parent): a 4-byte big-endian length, then one
// JSON-encoded frame.
//
//	parent -> worker  run     {id, job}            start a run (one at a time)
//	worker -> parent  call    {id, call}           a driver call of the run
//	worker -> parent  rec     {id, call, val}      a call the worker answered itself (local)
//	worker -> parent  require {id, from, spec}     resolve and load a module
//	parent -> worker  reply   {id, val | mod | err} the answer to call/require
//	worker -> parent  abort   {id, stop}           the run is being stopped, and why
//	parent -> worker  stop    {id, stop}           stop the run (its deadline passed)
//	worker -> parent  done    {id, out, answered}  the run's outcome, and the seqs
//	                                               answered from the run frame's recorded answers
//
// A run frame may list local calls ("clock.now", "random.seed"): the
// worker answers those itself and streams each with its answer in a rec
// frame, without waiting (Request.StreamLocal).
//
// A replayed run's frame carries recorded answers (ans): the worker answers
// a call whose seq, driver, op and request bytes equal one of them itself,
// without a call frame, and lists the seqs it so answered in done; every
// other call goes to the parent.
//
//	worker -> parent  hello   {prot}               first frame: protections in force
type frame struct {
	T    string           `json:"t"`
	ID   uint64           `json:"id"`
	Job  *sandbox.Job     `json:"job,omitempty"`
	Call *driver.Call     `json:"call,omitempty"`
	From string           `json:"from,omitempty"`
	Spec string           `json:"spec,omitempty"`
	Val  json.RawMessage  `json:"val,omitempty"`
	Mod  *sandbox.Module  `json:"mod,omitempty"`
	Err  *driver.Error    `json:"err,omitempty"`
	Out  *sandbox.Outcome `json:"out,omitempty"`
	Prot *confine.Report  `json:"prot,omitempty"`
	Stop *sandbox.Error   `json:"stop,omitempty"`
	// Ans and Answered: see recorded answers above.
	Ans      []answer `json:"ans,omitempty"`
	Local    []string `json:"local,omitempty"`
	Answered []uint64 `json:"answered,omitempty"`
}

// answer is a recorded call a worker may answer itself (a replay).
type answer struct {
	Seq     uint64          `json:"seq"`
	Driver  string          `json:"driver"`
	Op      string          `json:"op"`
	Request json.RawMessage `json:"req,omitempty"`
	Val     json.RawMessage `json:"val,omitempty"`
	Err     *driver.Error   `json:"err,omitempty"`
}

// maxAnswerBytes bounds the recorded answers one run frame carries: the
// calls past it are answered by the parent, as any other.
const maxAnswerBytes = 16 << 20

// maxFrame bounds one frame (a module source, a file read, an outcome).
const maxFrame = 64 << 20

// errFrameTooBig: a frame was not written because it exceeds maxFrame; the
// stream is intact.
var errFrameTooBig = errors.New("frame too large")

func writeFrame(w io.Writer, f *frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if len(b) > maxFrame {
		return fmt.Errorf("%w: %d bytes encoded, the limit is %d", errFrameTooBig, len(b), maxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

func readFrame(r *bufio.Reader) (*frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", n, maxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	f := new(frame)
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("malformed frame: %w", err)
	}
	return f, nil
}

// timeAfter is time.AfterFunc, named for readability at call sites.
var timeAfter = time.AfterFunc
