package executor

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeArgs feeds arbitrary bytes as args to a tool that returns them:
// either the run refuses them as invalid_args, or the tool sees exactly the
// JSON object that was sent (compared as decoded values).
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"n": 10}`, `{"a": [1, 2.5, -3e10, null, true], "b": {"c": "\u00e9\ud83d\ude00"}}`, ``, `[]`, `"x"`, `{"__proto__": {"polluted": 1}}`, `{"a":1,"a":2}`, `{"big": 123456789012345678901234567890}`, `{`, "{\"s\": \"\xff\"}", `  {"k": "v"}  `} {
		f.Add([]byte(s))
	}
	e := newExec(f, IsolationInProcess, map[string]string{"tools/echo.ts": "export default (args: unknown) => args;\n"})
	f.Fuzz(func(t *testing.T, args []byte) {
		r := e.Exec(context.Background(), Request{Path: "tools/echo.ts", Args: json.RawMessage(args)})
		if !r.Success {
			if r.Error.Kind != "invalid_args" {
				t.Fatalf("args %q: failed with %s: %s", args, r.Error.Kind, r.Error.Message)
			}
			return
		}
		var in, out any
		if len(args) == 0 || json.Unmarshal(args, &in) != nil {
			in = map[string]any{}
		}
		if err := json.Unmarshal(r.Result, &out); err != nil {
			t.Fatalf("result %q is not JSON: %v", r.Result, err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("args %q came back as %s", args, r.Result)
		}
	})
}
