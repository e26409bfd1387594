package workerside

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agentos-run/agentos/actors/executor/internal/confine"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	driver "github.com/agentos-run/agentos/driver/driverbase"
)

// The parent and a worker exchange frames over the worker's stdin (parent to
// worker) and stdout (worker to parent): a 4-byte big-endian length, then one
// frame: JSON-encoded, or for the frames of a driver call (call, rec, reply)
// in the binary form described at hotMark (and a run's run and done frames,
// described at appendRun).
//
//	parent -> worker  run     {id, job}            start a run (one at a time)
//	worker -> parent  call    {id, call}           a driver call of the run
//	worker -> parent  rec     {id, call, val}      a call the worker answered itself (local)
//	worker -> parent  require {id, from, spec}     resolve and load a module
//	parent -> worker  reply   {id, val | mod | err, pin} the answer to call/require
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
// A run frame may carry a pin plan (snap): the run pins its reads of the
// tool tree in the worker (pinGate). A reply to a read_file call then says
// whether the worker may keep its answer (pin) and answer a later read of
// the same request itself, sending nothing.
//
//	worker -> parent  hello   {prot, build}        first frame: protections in force, its build
type Frame struct {
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
	// Build, in a hello: the worker's BuildID, which a worker found next
	// to the executable MUST match (the parent's pool checks it).
	Build string         `json:"build,omitempty"`
	Stop  *sandbox.Error `json:"stop,omitempty"`
	// Ans and Answered: see recorded answers above.
	Ans      []Answer `json:"ans,omitempty"`
	Local    []string `json:"local,omitempty"`
	Answered []uint64 `json:"answered,omitempty"`
	// Snap and Pin: see the pin plan above.
	Snap *PinPlan `json:"snap,omitempty"`
	Pin  bool     `json:"pin,omitempty"`
}

// answer is a recorded call a worker may answer itself (a replay).
type Answer struct {
	Seq     uint64          `json:"seq"`
	Driver  string          `json:"driver"`
	Op      string          `json:"op"`
	Request json.RawMessage `json:"req,omitempty"`
	Val     json.RawMessage `json:"val,omitempty"`
	Err     *driver.Error   `json:"err,omitempty"`
}

// maxAnswerBytes bounds the recorded answers one run frame carries: the
// calls past it are answered by the parent, as any other.
const MaxAnswerBytes = 16 << 20

// maxFrame bounds one frame (a module source, a file read, an outcome).
const MaxFrame = 64 << 20

// errFrameTooBig: a frame was not written because it exceeds maxFrame; the
// stream is intact.
var ErrFrameTooBig = errors.New("frame too large")

func WriteFrame(w io.Writer, f *Frame) error {
	if b, ok := appendHot(make([]byte, 4, 64+hotLen(f)), f); ok {
		if len(b)-4 > MaxFrame {
			return fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrFrameTooBig, len(b)-4, MaxFrame)
		}
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		_, err := w.Write(b)
		return err
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrFrameTooBig, len(b), MaxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// errMalformed: a frame that is not well formed was read.
var ErrMalformed = errors.New("malformed frame")

// errFrameRefused: a peer announced a frame over maxFrame; nothing of it
// was read or allocated, and the stream cannot be resynchronised.
var ErrFrameRefused = errors.New("frame refused")

func ReadFrame(r *bufio.Reader) (*Frame, error) {
	n, err := ReadFrameLen(r)
	if err != nil {
		return nil, err
	}
	return ReadFrameBody(r, n)
}

// readFrameLen reads a frame's length prefix and refuses one over maxFrame
// before anything of the frame is allocated.
func ReadFrameLen(r *bufio.Reader) (int, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return 0, fmt.Errorf("%w: its length prefix announces %d bytes, over the %d-byte limit of one frame%s", ErrFrameRefused, n, MaxFrame, textual(hdr[:]))
	}
	return int(n), nil
}

// textual says what a refused length prefix read as, when its four bytes
// are printable text: the output of a program that is not a worker.
func textual(hdr []byte) string {
	for _, c := range hdr {
		if c < ' ' && c != '\n' && c != '\t' || c > '~' {
			return ""
		}
	}
	return fmt.Sprintf(" (it reads as the text %q: the program printed text, not frames)", hdr)
}

// readFrameBody reads and decodes the n-byte frame whose length prefix
// readFrameLen returned.
func ReadFrameBody(r *bufio.Reader, n int) (*Frame, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	if len(b) > 0 && b[0] == hotMark {
		f, err := decodeHot(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return f, nil
	}
	f := new(Frame)
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return f, nil
}

// The frames of every driver call (call, rec, and a reply carrying a value
// or an error) are the hot path of a run: they are written in a compact
// binary form instead of JSON, which costs reflection on both sides of
// every call. A binary frame starts with hotMark (a JSON frame starts with
// '{'), then its kind, then its fields, each integer a uvarint and each
// string or byte string a uvarint length and its bytes:
//
//	call   hotMark 'c' id seq driver op request
//	rec    hotMark 'r' id seq driver op request val
//	reply  hotMark 'v' id val
//	reply  hotMark 'p' id val                (a value the worker may pin)
//	reply  hotMark 'e' id code message       (an error)
//
// IMPORTANT: decoding one is exactly as strict as decoding its JSON form:
// the request and the value MUST be valid JSON (or absent), and a string
// that is not UTF-8 is repaired as encoding/json repairs it. A frame that is
// not well formed, or has bytes left over, is malformed.
const hotMark = 0

// hotCallLen estimates the encoded size of c's fields.
func hotCallLen(c *driver.Call) int {
	if c == nil {
		return 0
	}
	return len(c.Driver) + len(c.Op) + len(c.Request)
}

// appendHot appends f's binary form to b; ok false if f is not a frame
// that has one (it is then written as JSON).
func appendHot(b []byte, f *Frame) ([]byte, bool) {
	switch f.T {
	case "run", "done":
		start, ok := len(b), false
		if f.T == "run" {
			b, ok = appendRun(b, f)
		} else {
			b, ok = appendDone(b, f)
		}
		if ok && hotAlloc(f) > hotBudget(len(b)-start) {
			return b[:start], false // its decoder would refuse it: see hotAmplification
		}
		return b, ok
	}
	if !hotFieldsOnly(f) {
		return b, false
	}
	if f.Call != nil && !asMarshaled(f.Call.Request) || !asMarshaled(f.Val) {
		return b, false
	}
	kind := hotKind(f)
	if kind == 0 {
		return b, false
	}
	b = append(b, hotMark, kind)
	b = binary.AppendUvarint(b, f.ID)
	switch kind {
	case 'c':
		return appendCall(b, f.Call), true
	case 'r':
		return appendBytes(appendCall(b, f.Call), f.Val), true
	case 'v', 'p':
		return appendBytes(b, f.Val), true
	}
	b = appendBytes(b, []byte(f.Err.Code))
	return appendBytes(b, []byte(f.Err.Message)), true
}

// hotFieldsOnly reports whether f sets no field but those a binary frame
// carries (T, ID, Call, Val, Err).
func hotFieldsOnly(f *Frame) bool {
	return f.Job == nil && f.From == "" && f.Spec == "" && f.Mod == nil && f.Out == nil && f.Prot == nil && f.Build == "" && f.Stop == nil && f.Ans == nil && f.Local == nil && f.Answered == nil && f.Snap == nil
}

// hotKind is the kind of f's binary form (see hotMark), 0 when its fields
// do not make one: a call carries a call and nothing else, a rec a call and
// its value, a reply a value (pinnable or not) or an error (not both, and
// an error is never pinnable).
func hotKind(f *Frame) byte {
	switch {
	case f.T == "call" && f.Call != nil && f.Val == nil && f.Err == nil && !f.Pin:
		return 'c'
	case f.T == "rec" && f.Call != nil && f.Err == nil && !f.Pin:
		return 'r'
	case f.T != "reply" || f.Call != nil:
		return 0
	case f.Err == nil && f.Pin:
		return 'p'
	case f.Err == nil:
		return 'v'
	case f.Val == nil && !f.Pin:
		return 'e'
	}
	return 0
}

// asMarshaled reports whether json.Marshal would write the raw JSON v as it
// is: it is valid, compact, and has nothing Marshal escapes (<, >, &, U+2028,
// U+2029). Any other value goes in a JSON frame, so that its bytes (and a
// failure to encode it) are exactly what they were before the binary form.
func asMarshaled(v json.RawMessage) bool {
	if len(v) == 0 {
		return true
	}
	in, esc := false, false
	for i, c := range v {
		switch {
		case esc:
			esc = false
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(v) && v[i+1] == 0x80 && (v[i+2] == 0xA8 || v[i+2] == 0xA9):
			return false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return json.Valid(v)
}

func appendCall(b []byte, c *driver.Call) []byte {
	b = binary.AppendUvarint(b, c.Seq)
	b = appendBytes(b, []byte(c.Driver))
	b = appendBytes(b, []byte(c.Op))
	return appendBytes(b, c.Request)
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// hotReader reads the fields of a binary frame; the first failure sticks.
type hotReader struct {
	b      []byte
	err    error
	budget int // what decoding may still allocate for lists (see hotAmplification)
}

func (r *hotReader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }

// readVarint reads one integer with read (binary.Varint or Uvarint).
func readVarint[T int64 | uint64](r *hotReader, read func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := read(r.b)
	if n <= 0 {
		r.err = errors.New("truncated or overlong integer")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *hotReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("a field of %d bytes runs past the frame's end", n)
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

// str reads a string, repairing invalid UTF-8 as encoding/json does.
func (r *hotReader) str() string { return validUTF8(r.bytes()) }

// json reads a JSON value (nil if empty, as omitempty leaves it out).
func (r *hotReader) json(what string) json.RawMessage {
	v := r.bytes()
	if len(v) == 0 {
		return nil
	}
	if r.err == nil && !json.Valid(v) {
		r.err = fmt.Errorf("the %s is not valid JSON", what)
	}
	return v
}

func (r *hotReader) call() *driver.Call {
	c := &driver.Call{Seq: r.uvarint()}
	c.Driver = r.str()
	c.Op = r.str()
	c.Request = r.json("request")
	return c
}

func decodeHot(b []byte) (*Frame, error) {
	if len(b) < 2 {
		return nil, errors.New("a binary frame without a kind")
	}
	r := &hotReader{b: b[2:], budget: hotBudget(len(b))}
	f := &Frame{ID: r.uvarint()}
	switch b[1] {
	case 'c':
		f.T, f.Call = "call", r.call()
	case 'r':
		f.T, f.Call = "rec", r.call()
		f.Val = r.json("value")
	case 'v', 'p':
		f.T, f.Val, f.Pin = "reply", r.json("value"), b[1] == 'p'
	case 'e':
		f.T = "reply"
		f.Err = &driver.Error{Code: r.str()}
		f.Err.Message = r.str()
	case 'j':
		r.run(f)
	case 'd':
		r.done(f)
	default:
		return nil, fmt.Errorf("unknown binary frame kind %q", b[1])
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%d bytes after a binary %s frame's fields", len(r.b), f.T)
	}
	return f, nil
}

// validUTF8 returns b as a string, each byte of it that is not part of
// valid UTF-8 replaced by U+FFFD (as encoding/json decodes a string).
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteString("\uFFFD")
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}
