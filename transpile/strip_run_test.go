package transpile

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dop251/goja"
)

// outcome is what running a module's default export gave: its result as
// JSON, the names it exports, or the error it threw (with its stack).
type outcome struct {
	Result  string
	Exports string
	Err     string
	Stack   string
}

// runModule compiles js as the sandbox does, loads it as a CommonJS module
// with the prepared helpers and calls its default export with args (not
// when args is ""), settling a promise. require of another module throws.
func runModule(path, js, args string) outcome {
	vm := goja.New()
	prog, err := goja.Compile(path, js, false)
	if err != nil {
		return outcome{Err: "compile: " + err.Error()}
	}
	// The helpers are ours, not the tool's: they load before the tool's
	// 300 ms start (under -race on a loaded machine they took longer).
	helpers, err := vm.RunProgram(goja.MustCompile("helpers", HelpersJS, true))
	if err != nil {
		panic(err)
	}
	timer := time.AfterFunc(300*time.Millisecond, func() { vm.Interrupt("timeout") })
	defer timer.Stop()
	thrown := func(err error) (o outcome) {
		timer.Stop()
		vm.ClearInterrupt()
		// printing the value may run the tool's own toString: bound it too
		t := time.AfterFunc(300*time.Millisecond, func() { vm.Interrupt("timeout") })
		defer t.Stop()
		defer func() {
			if recover() != nil {
				o = outcome{Err: "unprintable"}
			}
		}()
		return thrownBy(err)
	}
	var o outcome
	wrapper, err := vm.RunProgram(prog)
	if err != nil {
		return outcome{Err: "load: " + err.Error()}
	}
	fn, _ := goja.AssertFunction(wrapper)
	module, exports := vm.NewObject(), vm.NewObject()
	module.Set("exports", exports)
	req := func(c goja.FunctionCall) goja.Value {
		panic(vm.NewTypeError("require(%v): no modules here", c.Argument(0)))
	}
	if _, err := fn(goja.Undefined(), exports, vm.ToValue(req), module, vm.ToValue(path), vm.ToValue("tools"), helpers); err != nil {
		return thrown(err)
	}
	vm.Set("module", module)
	vm.Set("call", args != "")
	vm.Set("args", args)
	v, err := vm.RunString(`(function () {
  var ex = module.exports, out = { keys: Object.keys(ex).join(","), esm: !!ex.__esModule };
  var def = ex.default === undefined ? ex : ex.default;
  if (typeof def !== "function") { out.result = "no default export"; return out; }
  if (!call) return out;
  var r = def(JSON.parse(args));
  if (r && typeof r.then === "function") {
    r.then(function (v) { out.result = JSON.stringify(v); }, function (e) { out.error = String(e); out.stack = e && e.stack; });
  } else { out.result = JSON.stringify(r); }
  return out;
})()`)
	if err != nil {
		return thrown(err)
	}
	m := v.Export().(map[string]any)
	ex, _ := json.Marshal([]any{m["keys"], m["esm"]})
	o.Exports = string(ex)
	o.Result = fmt.Sprint(m["result"])
	if e, ok := m["error"]; ok {
		o.Err, o.Stack = fmt.Sprint(e), fmt.Sprint(m["stack"])
	}
	return o
}

func thrownBy(err error) outcome {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		return outcome{Err: "timeout"}
	}
	if ex, ok := err.(*goja.Exception); ok {
		return outcome{Err: ex.Value().String(), Stack: strings.TrimSpace(ex.String())}
	}
	return outcome{Err: err.Error()}
}
