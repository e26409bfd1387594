package sandbox

import (
	"fmt"

	"github.com/dop251/goja"
)

// MaxJSONDepth bounds how deeply the text given to JSON.parse may nest arrays
// and objects (the limit of Go's encoding/json). IMPORTANT: goja's parser
// recurses on the Go stack once per level, and a Go stack overflow is a fatal
// error that no recover catches: '['.repeat(5e6) killed the whole process
// (the host, in-process). The guard refuses such text before parsing it.
const MaxJSONDepth = 10000

// guardJSONParse replaces JSON.parse on jsonObj with a version that measures
// the text's nesting first and throws a RangeError (which the tool may catch)
// when it exceeds MaxJSONDepth. It returns the guarded function, for the
// sandbox's own parsing of arguments and driver answers.
func guardJSONParse(vm *goja.Runtime, jsonObj *goja.Object) (goja.Callable, error) {
	parse, ok := goja.AssertFunction(jsonObj.Get("parse"))
	if !ok {
		return nil, fmt.Errorf("JSON.parse is not a function")
	}
	rangeErr := vm.Get("RangeError")
	guarded := func(c goja.FunctionCall) goja.Value {
		text := c.Argument(0).ToString() // once, as JSON.parse itself does
		if d := jsonDepth(text.String(), MaxJSONDepth); d > MaxJSONDepth {
			obj, err := vm.New(rangeErr, vm.ToValue(fmt.Sprintf("JSON.parse: the text nests arrays or objects more than %d levels deep, the sandbox's limit; such input is refused before parsing", MaxJSONDepth)))
			if err != nil {
				panic(err)
			}
			panic(obj)
		}
		args := []goja.Value{text}
		if len(c.Arguments) > 1 {
			args = append(args, c.Arguments[1])
		}
		v, err := parse(goja.Undefined(), args...)
		if err != nil {
			panic(err) // rethrown as it came: a SyntaxError the tool may catch
		}
		return v
	}
	fn := vm.ToValue(guarded).ToObject(vm)
	// Look like the built-in: JSON.parse.name is "parse", its length 2.
	_ = fn.DefineDataProperty("name", vm.ToValue("parse"), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	_ = fn.DefineDataProperty("length", vm.ToValue(2), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	if err := jsonObj.DefineDataProperty("parse", fn, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
		return nil, err
	}
	out, _ := goja.AssertFunction(fn)
	return out, nil
}

// jsonDepth returns how deeply s nests arrays and objects, outside string
// literals, stopping as soon as it passes limit. It does not validate s: the
// parser does that afterwards.
func jsonDepth(s string, limit int) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case ']', '}':
			depth--
		}
	}
	return deepest
}
