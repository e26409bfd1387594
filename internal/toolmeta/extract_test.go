package toolmeta

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestExtractDescriptionAndTags(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		desc      string
		tags      []string
	}{
		{
			name: "one-line jsdoc with inline tag",
			src:  "/** Calculates compound interest over years. @tag finance */\nexport default function ci(args: { p: number }) { return args.p; }\n",
			desc: "Calculates compound interest over years.",
			tags: []string{"finance"},
		},
		{
			name: "seed roi tool",
			src: `
        /**
         * Calculates the Return on Investment based on cost and revenue.
         */
        export default function roi(args: { cost: number, revenue: number }) {
          return (args.revenue - args.cost) / args.cost;
        }`,
			desc: "Calculates the Return on Investment based on cost and revenue.",
		},
		{
			name: "multi-line with tags and params",
			src: `/**
 * Sends a monthly report
 * to the finance team.
 *
 * @tag finance, reports
 * @tag Email
 * @param args.to - who receives it
 *   (a team alias)
 * @returns the message id
 */
export default async function send(args: { to: string }) { return args.to; }`,
			desc: "Sends a monthly report to the finance team.",
			tags: []string{"finance", "reports", "email"},
		},
		{
			name: "tag first then description",
			src:  "/**\n * @tag math\n * Computes the nth Fibonacci number.\n */\nexport default function fib(args: { n: number }) { return args.n; }",
			desc: "Computes the nth Fibonacci number.",
			tags: []string{"math"},
		},
		{
			name: "jsdoc before the default export wins over a header",
			src:  "/** Header. */\nimport x from './lib/x';\n/** The tool. */\nexport default function f() { return x; }",
			desc: "The tool.",
		},
		{
			name: "header before imports when the export has none",
			src:  "/** Parses CSV text. @tag data */\nimport x from './lib/x';\nconst SEP = ',';\nexport default function f() { return x + SEP; }",
			desc: "Parses CSV text.",
			tags: []string{"data"},
		},
		{
			name: "export by name: the declaration's jsdoc",
			src:  "import x from './lib/x';\n/** Doubles a number. */\nfunction double(args: { n: number }) { return args.n * 2; }\nexport default double;",
			desc: "Doubles a number.",
		},
		{
			name: "no jsdoc",
			src:  "// just a line comment\nexport default function f() { return 1; }",
		},
		{
			name: "a plain block comment is not jsdoc",
			src:  "/* not jsdoc */\nexport default function f() { return 1; }",
		},
		{
			name: "jsdoc on a helper later in the file is not the tool's",
			src:  "export default function f() { return g(); }\n/** helper */\nfunction g() { return 1; }",
		},
		{
			name: "inline link and email",
			src:  "/** Mails {@link https://x.test|the page} to ops@example.com. */\nexport default function f() {}",
			desc: "Mails the page to ops@example.com.",
		},
		{
			name: "syntax error after the jsdoc",
			src:  "/** Broken but described. @tag wip */\nexport default function f(args: { n: number ) {\n  return (;\n",
			desc: "Broken but described.",
			tags: []string{"wip"},
		},
		{
			name: "garbage before the jsdoc",
			src:  ")))(((\n/** Still found. */\nexport default function f( {",
			desc: "Still found.",
		},
		{
			name: "markdown and a closing rule of stars",
			src:  "/**\n * **Bold** claim.\n ***/\nexport default function f() {}",
			desc: "**Bold** claim.",
		},
		{
			name: "a banner of stars is not jsdoc",
			src:  "/*********** Banner ***********/\nexport default function f() {}",
		},
		{
			name: "empty source",
			src:  "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Extract([]byte(tc.src))
			if m.Description != tc.desc {
				t.Errorf("description = %q, want %q", m.Description, tc.desc)
			}
			if !reflect.DeepEqual(m.Tags, tc.tags) {
				t.Errorf("tags = %q, want %q", m.Tags, tc.tags)
			}
		})
	}
}

func TestExtractParameters(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // compact JSON; "" for none
	}{
		{
			name: "function declaration",
			src:  "export default function fib(args: { n: number; name?: string }) { return args.n; }",
			want: `{"type":"object","properties":{"n":{"type":"number"},"name":{"type":"string"}},"required":["n"]}`,
		},
		{
			name: "async anonymous function, commas",
			src:  "export default async function (args: { url: string, retries?: number, verbose: boolean }) {}",
			want: `{"type":"object","properties":{"url":{"type":"string"},"retries":{"type":"number"},"verbose":{"type":"boolean"}},"required":["url","verbose"]}`,
		},
		{
			name: "arrow function, destructured",
			src:  "export default ({ a, b }: { a: number; b?: string }) => a",
			want: `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"string"}},"required":["a"]}`,
		},
		{
			name: "async arrow with return type",
			src:  "export default async (args: { ids: number[] }): Promise<number> => args.ids.length",
			want: `{"type":"object","properties":{"ids":{"type":"array","items":{"type":"number"}}},"required":["ids"]}`,
		},
		{
			name: "arrays, nested objects, unknown types",
			src: `export default function f(args: {
  names: Array<string>;
  matrix: number[][];
  opts: { deep: { on: boolean }; label?: string };
  when: Date;
  extra: unknown;
  rows: { id: number }[];
}) {}`,
			want: `{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}},"matrix":{"type":"array","items":{"type":"array","items":{"type":"number"}}},"opts":{"type":"object","properties":{"deep":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]},"label":{"type":"string"}},"required":["deep"]},"when":{},"extra":{},"rows":{"type":"array","items":{"type":"object","properties":{"id":{"type":"number"}},"required":["id"]}}},"required":["names","matrix","opts","when","extra","rows"]}`,
		},
		{
			name: "literal unions, optional unions, records",
			src:  "export default function f(args: { mode: 'fast' | 'slow'; n: number | undefined; tags: Record<string, number>; v: string | number }) {}",
			want: `{"type":"object","properties":{"mode":{"type":"string","enum":["fast","slow"]},"n":{"type":"number"},"tags":{"type":"object","additionalProperties":{"type":"number"}},"v":{"anyOf":[{"type":"string"},{"type":"number"}]}},"required":["mode","n","tags","v"]}`,
		},
		{
			name: "property docs from inline jsdoc and @param",
			src: `/**
 * Greets.
 * @param args.name - who to greet
 */
export default function greet(args: {
  name: string;
  /** How loud, 1 to 3. */
  volume?: number;
}) {}`,
			want: `{"type":"object","properties":{"name":{"type":"string","description":"who to greet"},"volume":{"type":"number","description":"How loud, 1 to 3."}},"required":["name"]}`,
		},
		{
			name: "local interface",
			src:  "interface Args { n: number; s?: string }\nexport default function f(args: Args) {}",
			want: `{"type":"object","properties":{"n":{"type":"number"},"s":{"type":"string"}},"required":["n"]}`,
		},
		{
			name: "local type alias, exported by name",
			src:  "type Args = { n: number };\nconst f = (args: Readonly<Args>) => args.n;\nexport default f;",
			want: `{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`,
		},
		{
			name: "self-referential type",
			src:  "type Node = { v: number; next?: Node };\nexport default function f(args: Node) {}",
			want: `{"type":"object","properties":{"v":{"type":"number"},"next":{}},"required":["v"]}`,
		},
		{
			name: "untyped destructuring",
			src:  "export default function f({ a, b = 2 }) { return a + b; }",
			want: `{"type":"object","properties":{"a":{},"b":{}},"required":["a"]}`,
		},
		{name: "no parameter", src: "export default function f() { return 1; }"},
		{name: "untyped parameter", src: "export default function f(args) { return args; }"},
		{name: "imported type", src: "import { Args } from './lib/types';\nexport default function f(args: Args) {}"},
		{name: "not an object", src: "export default function f(n: number) { return n; }"},
		{name: "no default export", src: "export function f(args: { n: number }) {}"},
		{
			name: "syntax error inside the type keeps what parsed",
			src:  "export default function f(args: { n: number ) {",
			want: `{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(Extract([]byte(tc.src)).Parameters)
			if got != tc.want {
				t.Errorf("parameters =\n  %s\nwant\n  %s", got, tc.want)
			}
			if got != "" && !json.Valid([]byte(got)) {
				t.Errorf("parameters are not valid JSON: %s", got)
			}
		})
	}
}

func TestExtractDeepTypeIsBounded(t *testing.T) {
	src := "export default function f(args: " + strings.Repeat("{ a: ", 200) + "number" + strings.Repeat(" }", 200) + ") {}"
	p := Extract([]byte(src)).Parameters
	if !json.Valid(p) {
		t.Fatalf("invalid schema %s", p)
	}
	if d := strings.Count(string(p), `"properties"`); d > maxSchemaDepth+1 {
		t.Errorf("schema nests %d objects, want at most %d", d, maxSchemaDepth+1)
	}
}
