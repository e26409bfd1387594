package toolmeta

import (
	"errors"
	"testing"
)

// TestParamsValidate checks arguments against the schema meta.json
// declares (issue 11, item 9: a number for a string parameter ran and
// returned null, success).
func TestParamsValidate(t *testing.T) {
	const src = `
type Mode = "fast" | "slow";
interface Item { id: number; tags?: string[] }
/** Does things. */
export default function run(args: {
  name: string;
  count?: number;
  mode: Mode;
  flag: boolean | null;
  maybe: string | undefined;
  items: Item[];
  nested: { deep: { x: 1 | 2 } };
  either?: string | number;
  dict?: Record<string, number>;
  "odd-key"?: string;
  anything?: any;
}) { return args; }
`
	p := ParamsOf([]byte(src))
	if p == nil {
		t.Fatal("no schema for a declared parameter type")
	}
	ok := `"name": "a", "mode": "fast", "flag": null, "items": [{"id": 1, "tags": ["x"]}], "nested": {"deep": {"x": 2}}`
	valid := []string{
		`{` + ok + `}`,
		`{` + ok + `, "count": 3, "either": 5, "dict": {"a": 1}, "extra": [1], "anything": {"z": null}, "maybe": "m"}`,
		`{` + ok + `, "either": "s", "odd-key": "v"}`,
	}
	for _, a := range valid {
		if err := p.Validate([]byte(a)); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	invalid := map[string]string{
		`{"name": 5, "mode": "fast", "flag": true, "items": [], "nested": {"deep": {"x": 1}}}`: "args.name: expected string, got number",
		`{"mode": "fast", "flag": true, "items": [], "nested": {"deep": {"x": 1}}}`:            "args.name: expected string, got nothing (the property is required)",
		`{` + ok + `, "count": "3"}`: "args.count: expected number, got string",
		`{"name": "a", "mode": "medium", "flag": true, "items": [], "nested": {"deep": {"x": 1}}}`:                     `args.mode: expected one of "fast", "slow", got "medium"`,
		`{"name": "a", "mode": "fast", "flag": "yes", "items": [], "nested": {"deep": {"x": 1}}}`:                      "args.flag: expected boolean or null, got string",
		`{"name": "a", "mode": "fast", "flag": true, "items": [{"id": 1}, {"id": "2"}], "nested": {"deep": {"x": 1}}}`: "args.items[1].id: expected number, got string",
		`{"name": "a", "mode": "fast", "flag": true, "items": [{"id": 1, "tags": [1]}], "nested": {"deep": {"x": 1}}}`: "args.items[0].tags[0]: expected string, got number",
		`{"name": "a", "mode": "fast", "flag": true, "items": [], "nested": {"deep": {"x": 3}}}`:                       "args.nested.deep.x: expected one of 1, 2, got 3",
		`{"name": "a", "mode": "fast", "flag": true, "items": {}, "nested": {"deep": {"x": 1}}}`:                       "args.items: expected array of object, got object",
		`{` + ok + `, "either": true}`:             "args.either: expected string or number, got boolean",
		`{` + ok + `, "dict": {"a": 1, "b": "x"}}`: `args.dict.b: expected number, got string`,
		`{` + ok + `, "odd-key": 1}`:               `args["odd-key"]: expected string, got number`,
		`{` + ok + `, "name": null}`:               "args.name: expected string, got null",
	}
	for a, want := range invalid {
		err := p.Validate([]byte(a))
		var ae *ArgsError
		if !errors.As(err, &ae) || err.Error() != want {
			t.Errorf("%s:\n got  %v\n want %s", a, err, want)
		}
	}
}

// TestParamsOfUndeclared: a tool whose parameter has no declared type has
// no schema to hold its arguments to (its meta.json may still list the
// destructured names).
func TestParamsOfUndeclared(t *testing.T) {
	for _, src := range []string{
		"export default function ({ a, b = 1 }) { return a; }\n",
		"export default (x) => x;\n",
		"export default () => 1;\n",
		"export default function (args: any) { return args; }\n",
	} {
		if p := ParamsOf([]byte(src)); p.Validate([]byte(`{"a": 1}`)) != nil || p.Validate([]byte(`{}`)) != nil {
			t.Errorf("%q: an undeclared parameter must accept any object", src)
		}
	}
	// A declared object type with only "any" members costs nothing to check.
	if p := ParamsOf([]byte("export default (a: { x?: any }) => a;\n")); p == nil || !p.trivial {
		t.Errorf("want a trivial schema, got %+v", p)
	}
}

// BenchmarkParamsValidate measures what checking a run's arguments adds to
// it (the schema itself is cached by the executor).
func BenchmarkParamsValidate(b *testing.B) {
	p := ParamsOf([]byte("export default function fib(args: { n: number; label?: string; tags?: string[] }) { return args.n; }\n"))
	args := []byte(`{"n": 10, "label": "x", "tags": ["a", "b"]}`)
	for b.Loop() {
		if err := p.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}
