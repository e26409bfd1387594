package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/dop251/goja"
)

// TestPlainRequestIsStringify checks the fast request encoding against
// JSON.stringify of the request object, byte for byte, and the fast answer
// decoding against JSON.parse.
func TestPlainRequestIsStringify(t *testing.T) {
	vm := goja.New()
	b := Binding{Name: "write_file", Driver: "fs", Op: "write_file", Params: []string{"path", "content"}}
	for _, args := range [][]string{{`'data.txt'`}, {`'a'`, `'b c'`}, {`undefined`, `'x'`}, {`'q"uote'`}, {`'é'`}, {`'\n'`}, {`1`}, {`'a'`, `null`},
		{`new String('s')`}, {`'a'`, `'b'`, `'c'`}, {}, {`'\u007f'`}, {`'<&>'`}} {
		vals := make([]goja.Value, len(args))
		for i, a := range args {
			v, err := vm.RunString("(" + a + ")")
			if err != nil {
				t.Fatal(err)
			}
			vals[i] = v
		}
		fast, ok := plainRequest(b, goja.FunctionCall{Arguments: vals})
		if !ok {
			continue
		}
		obj := vm.NewObject()
		for i, v := range vals {
			if !goja.IsUndefined(v) {
				obj.Set(b.Params[i], v)
			}
		}
		vm.Set("o", obj)
		slow, err := vm.RunString("JSON.stringify(o)")
		if err != nil {
			t.Fatal(err)
		}
		if fast != slow.String() {
			t.Fatalf("%v: fast %s, JSON.stringify %s", args, fast, slow)
		}
	}
	for _, s := range []string{`"plain"`, `""`, `"é€"`, `"a\"b"`, `"a\\nb"`, `"` + "\t" + `"`, `"\ud83d"`, `"` + "\xff" + `"`, `12`, `"x`} {
		v, ok := plainString(json.RawMessage(s))
		if !ok {
			continue
		}
		vm.Set("s", s)
		want, err := vm.RunString("JSON.parse(s)")
		if err != nil || !want.StrictEquals(vm.ToValue(v)) {
			t.Fatalf("%s: fast %q, JSON.parse %v (%v)", s, v, want, err)
		}
	}
}

// TestKeptRequestAndAnswer: the request a run keeps (run.plainRequest) is
// given again only for the same binding and argument, and the answer it
// keeps (lastAnswer) only for the same JSON string.
func TestKeptRequestAndAnswer(t *testing.T) {
	vm := goja.New()
	r := &run{vm: vm}
	read := Binding{Name: "read_file", Driver: "fs", Op: "read_file", Params: []string{"path"}}
	find := Binding{Name: "find", Driver: "fs", Op: "find", Params: []string{"name"}}
	for _, c := range []struct {
		b         Binding
		arg, want string
	}{{read, "a", `{"path":"a"}`}, {read, "a", `{"path":"a"}`}, {read, "b", `{"path":"b"}`}, {find, "b", `{"name":"b"}`}, {read, "b", `{"path":"b"}`}, {read, `q"`, ""}} {
		got, ok := r.plainRequest(c.b, goja.FunctionCall{Arguments: []goja.Value{vm.ToValue(c.arg)}})
		if string(got) != c.want || ok != (c.want != "") {
			t.Fatalf("%s(%q): %q %v, want %q", c.b.Name, c.arg, got, ok, c.want)
		}
	}
	v, err := r.fromJSON(json.RawMessage(`"abc"`))
	if err != nil || v.String() != "abc" {
		t.Fatalf("%v %v", v, err)
	}
	for _, s := range []string{`"abc"`, `"abd"`, `"ab\"`, `xabcx`, `"abcd"`, `"ab"`} {
		kept, ok := r.answer.of(json.RawMessage(s))
		if ok != (s == `"abc"`) || ok && kept != v {
			t.Fatalf("%s: kept answer %v %v", s, kept, ok)
		}
	}
}
