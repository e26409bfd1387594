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
