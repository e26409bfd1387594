package workerside

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
)

// A run's first and last frames (run and done) have a binary form too: a
// run frame carries the tool's whole source, and decoding it as JSON cost
// a worker about 35 µs of a ~1.1 ms exec_tool. Their fields, in the
// notation of hotMark:
//
//	run   hotMark 'j' id path hash js args limits bindings local snap
//	done  hotMark 'd' id result logs error calls answered
//
// limits are four varints (timeout in ns, memory, call depth, output). A
// list is a uvarint count and its items, except the lists whose JSON form
// tells null from [] (bindings, a binding's params, logs): their count is
// one more than their items, 0 standing for null. A pin plan (snap) and an
// error are a byte, 0 when absent, 1 and their fields when present:
//
//	binding  name driver op params
//	snap     follows(0|1) held
//	error    kind message stack code
//
// A run frame with recorded answers (a replay) is written as JSON, as is a
// frame whose args or result json.Marshal would rewrite (asMarshaled).
// IMPORTANT: as for the other binary frames, each reads back exactly as its
// JSON form: a nil args reads as null, a list JSON omits when empty reads
// as nil, and the same strings are repaired.

// hotAmplification bounds what decoding a binary frame may allocate
// besides the strings' bytes (which the frame holds): hotAmplification
// times the frame's bytes, plus hotSlack. A list's items take more memory
// than their wire form (a string's header is 16 bytes, an empty string's
// wire form 1, a binding 72 bytes, its wire form 4): unbounded, a
// compromised worker could make its parent allocate 16 times each frame it
// sends. The JSON form allocates at most about 5 times ("" is 3 bytes);
// appendHot writes a frame whose lists would pass the bound as JSON.
const (
	hotAmplification = 6
	hotSlack         = 64 << 10
)

func hotBudget(frameBytes int) int { return hotAmplification*frameBytes + hotSlack }

// hotAlloc is what decoding run or done frame f allocates for its lists
// (see hotAmplification).
func hotAlloc(f *Frame) int {
	n := 8*len(f.Answered) + strHeader*len(f.Local)
	if f.Job != nil {
		n += bindingSize * len(f.Job.Bindings)
		for _, bd := range f.Job.Bindings {
			n += strHeader * len(bd.Params)
		}
	}
	if f.Snap != nil {
		n += 8 * len(f.Snap.Held)
	}
	if f.Out != nil {
		n += strHeader * len(f.Out.Logs)
	}
	return n
}

const (
	strHeader   = int(unsafe.Sizeof(""))
	bindingSize = int(unsafe.Sizeof(sandbox.Binding{}))
)

// hotLen estimates the encoded size of f's variable fields.
func hotLen(f *Frame) int {
	n := len(f.Val) + hotCallLen(f.Call)
	if f.Job != nil {
		n += len(f.Job.Entry.Path) + len(f.Job.Entry.Hash) + len(f.Job.Entry.JS) + len(f.Job.Args) + 32*len(f.Job.Bindings)
	}
	if f.Out != nil {
		n += len(f.Out.Result) + 8*len(f.Answered)
		for _, l := range f.Out.Logs {
			n += len(l) + 2
		}
	}
	return n
}

// appendRun appends the binary form of run frame f; ok false if it has
// none.
func appendRun(b []byte, f *Frame) ([]byte, bool) {
	j := f.Job
	if j == nil || !runFieldsOnly(f) || !asMarshaled(j.Args) || j.Args != nil && len(j.Args) == 0 {
		return b, false // (empty args that are not nil: json.Marshal refuses them)
	}
	args := j.Args
	if args == nil {
		args = json.RawMessage("null") // as json.Marshal writes it
	}
	b = binary.AppendUvarint(append(b, hotMark, 'j'), f.ID)
	b = appendStr(appendStr(appendStr(b, j.Entry.Path), j.Entry.Hash), j.Entry.JS)
	b = appendBytes(b, args)
	b = binary.AppendVarint(b, int64(j.Limits.Timeout))
	b = binary.AppendVarint(b, j.Limits.MemoryBytes)
	b = binary.AppendVarint(b, int64(j.Limits.MaxCallDepth))
	b = binary.AppendVarint(b, int64(j.Limits.MaxOutputBytes))
	b = appendNullable(b, j.Bindings == nil, len(j.Bindings))
	for _, bd := range j.Bindings {
		b = appendStr(appendStr(appendStr(b, bd.Name), bd.Driver), bd.Op)
		b = appendStrs(appendNullable(b, bd.Params == nil, len(bd.Params)), bd.Params)
	}
	b = appendStrs(binary.AppendUvarint(b, uint64(len(f.Local))), f.Local)
	if f.Snap == nil {
		return append(b, 0), true
	}
	b = append(b, 1, flag(f.Snap.Follows))
	return appendUints(b, f.Snap.Held), true
}

// runFieldsOnly reports whether run frame f sets no field but those its
// binary form carries (T, ID, Job, Local, Snap).
func runFieldsOnly(f *Frame) bool {
	return f.Call == nil && f.From == "" && f.Spec == "" && f.Val == nil && f.Mod == nil && f.Err == nil && f.Out == nil && f.Prot == nil && f.Build == "" && f.Stop == nil && f.Ans == nil && f.Answered == nil && !f.Pin
}

// appendDone appends the binary form of done frame f; ok false if it has
// none.
func appendDone(b []byte, f *Frame) ([]byte, bool) {
	o := f.Out
	if o == nil || !doneFieldsOnly(f) || !asMarshaled(o.Result) {
		return b, false
	}
	b = binary.AppendUvarint(append(b, hotMark, 'd'), f.ID)
	b = appendBytes(b, o.Result)
	b = appendStrs(appendNullable(b, o.Logs == nil, len(o.Logs)), o.Logs)
	if o.Err == nil {
		b = append(b, 0)
	} else {
		b = appendStr(appendStr(appendStr(appendStr(append(b, 1), string(o.Err.Kind)), o.Err.Message), o.Err.Stack), o.Err.Code)
	}
	b = binary.AppendUvarint(b, o.Calls)
	return appendUints(b, f.Answered), true
}

// doneFieldsOnly reports whether done frame f sets no field but those its
// binary form carries (T, ID, Out, Answered).
func doneFieldsOnly(f *Frame) bool {
	return f.Job == nil && f.Call == nil && f.From == "" && f.Spec == "" && f.Val == nil && f.Mod == nil && f.Err == nil && f.Prot == nil && f.Build == "" && f.Stop == nil && f.Ans == nil && f.Local == nil && f.Snap == nil && !f.Pin
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrs(b []byte, ss []string) []byte {
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

func appendUints(b []byte, vs []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

// appendNullable appends the count of a list whose JSON form tells null
// (isNil) from [].
func appendNullable(b []byte, isNil bool, n int) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func flag(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// run reads a run frame's fields into f.
func (r *hotReader) run(f *Frame) {
	j := &sandbox.Job{Entry: sandbox.Module{Path: r.str(), Hash: r.str(), JS: r.str()}}
	if j.Args = r.json("args"); j.Args == nil && r.err == nil {
		r.err = errors.New("a run frame without args")
	}
	j.Limits.Timeout = time.Duration(r.varint())
	j.Limits.MemoryBytes = r.varint()
	j.Limits.MaxCallDepth = r.int()
	j.Limits.MaxOutputBytes = r.int()
	if n, null := r.nullable(4); !null && r.charge(n*bindingSize) {
		j.Bindings = make([]sandbox.Binding, n)
		for i := range j.Bindings {
			bd := &j.Bindings[i]
			bd.Name, bd.Driver, bd.Op = r.str(), r.str(), r.str()
			if n, null := r.nullable(1); !null {
				bd.Params = r.strs(n)
			}
		}
	}
	f.T, f.Job = "run", j
	if n := r.count(1); n > 0 {
		f.Local = r.strs(n)
	}
	if r.flag("pin plan") {
		f.Snap = &PinPlan{Follows: r.flag("follows")}
		f.Snap.Held = r.uints()
	}
}

// done reads a done frame's fields into f.
func (r *hotReader) done(f *Frame) {
	o := &sandbox.Outcome{Result: r.json("result")}
	if n, null := r.nullable(1); !null {
		o.Logs = r.strs(n)
	}
	if r.flag("error") {
		o.Err = &sandbox.Error{Kind: sandbox.Kind(r.str()), Message: r.str(), Stack: r.str(), Code: r.str()}
	}
	o.Calls = r.uvarint()
	f.T, f.Out, f.Answered = "done", o, r.uints()
}

func (r *hotReader) varint() int64 { return readVarint(r, binary.Varint) }

// count reads a list's count, refused if its items (each at least size
// bytes) cannot fit in the bytes left: nothing is allocated for a count a
// frame cannot hold.
func (r *hotReader) count(size int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/size) {
		r.err = fmt.Errorf("a list of %d items runs past the frame's end", n)
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// nullable reads the count of a list whose JSON form tells null from [];
// null true for null (or after a failure).
func (r *hotReader) nullable(size int) (n int, null bool) {
	c := r.uvarint()
	if r.err != nil || c == 0 {
		return 0, true
	}
	if c-1 > uint64(len(r.b)/size) {
		r.err = fmt.Errorf("a list of %d items runs past the frame's end", c-1)
		return 0, true
	}
	return int(c - 1), false
}

// int reads a varint that MUST fit an int (as JSON's decoder requires).
func (r *hotReader) int() int {
	v := r.varint()
	if r.err == nil && int64(int(v)) != v {
		r.err = fmt.Errorf("%d does not fit an int", v)
	}
	return int(v)
}

// charge takes n bytes from what the frame may still allocate (see
// hotAmplification); false, with r.err set, when they are not left.
func (r *hotReader) charge(n int) bool {
	if r.err != nil {
		return false
	}
	if n > r.budget {
		r.err = fmt.Errorf("the frame's lists would take more than %d times its bytes in memory", hotAmplification)
		return false
	}
	r.budget -= n
	return true
}

func (r *hotReader) strs(n int) []string {
	if !r.charge(n * strHeader) {
		return nil
	}
	ss := make([]string, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		ss = append(ss, r.str())
	}
	return ss
}

// uints reads a list of uvarints, nil when empty (as JSON omits it).
func (r *hotReader) uints() []uint64 {
	n := r.count(1)
	if n == 0 || !r.charge(8*n) {
		return nil
	}
	vs := make([]uint64, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		vs = append(vs, r.uvarint())
	}
	return vs
}

// flag reads a byte that MUST be 0 or 1.
func (r *hotReader) flag(what string) bool {
	if r.err != nil {
		return false
	}
	if len(r.b) == 0 || r.b[0] > 1 {
		r.err = fmt.Errorf("the %s flag is missing or not 0 or 1", what)
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}
