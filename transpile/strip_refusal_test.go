package transpile

import (
	"strings"
	"testing"
)

// TestStripDeclines: each construct the fast path does not fully
// understand MUST go to esbuild (strip declines), and Runnable then gives
// esbuild's output.
func TestStripDeclines(t *testing.T) {
	for name, src := range map[string]string{
		"enum":                    "enum E { A }\nexport default () => E.A;\n",
		"const enum":              "const enum E { A }\nexport default () => E.A;\n",
		"namespace":               "namespace N { export const a = 1; }\nexport default () => N.a;\n",
		"parameter property":      "class C { constructor(private x: number) {} }\nexport default () => new C(1);\n",
		"readonly param prop":     "class C { constructor(readonly x: number) {} }\nexport default () => new C(1);\n",
		"this parameter":          "function f(this: any, a: number) { return a; }\nexport default () => f.call(null, 1);\n",
		"decorator":               "function d(c: any) {}\n@d class C {}\nexport default () => 1;\n",
		"import require":          "import fs = require('fs');\nexport default () => 1;\n",
		"export =":                "export = function () { return 1; };\n",
		"import":                  "import x from './x';\nexport default () => x;\n",
		"named import":            "import { x } from './x';\nexport default () => x;\n",
		"re-export":               "export { x } from './x';\nexport default () => 1;\n",
		"export star":             "export * from './x';\nexport default () => 1;\n",
		"syntax error":            "export default () => {\n",
		"missing token":           "const a = (1;\nexport default () => a;\n",
		"top-level await":         "await Promise.resolve(1);\nexport default () => 1;\n",
		"await in non-async":      "export default function () { await 1; }\n",
		"for await":               "export default async function () { for await (const x of []) {} }\n",
		"async generator":         "async function* g() { yield 1; }\nexport default () => g;\n",
		"async generator method":  "class C { async *m() {} }\nexport default () => C;\n",
		"top-level this":          "const t = this;\nexport default () => t;\n",
		"top-level return":        "return;\n",
		"angle-bracket assertion": "const a = <any>1;\nexport default () => a;\n",
		"dynamic import":          "export default async () => import('./x');\n",
		"import.meta":             "export default () => import.meta;\n",
		"with":                    "with (Math) {}\nexport default () => 1;\n",
		"hashbang":                "#!/usr/bin/env node\nexport default () => 1;\n",
		"object statement":        "{\"a\": 1}\n",
		"destructured export":     "export const { a } = { a: 1 };\nexport default () => a;\n",
		"multi-line arrow type":   "export default (a: number):\n  number => a;\n",
		"as before a paren line":  "const f = (x: any) => x\nconst g = f as any\n(1)\nexport default () => g;\n",
		"non-null before bracket": "let a: any = [1]\nconst b = a!\n[0]\nexport default () => b;\n",
		"default fn then paren":   "export default function () { return 1 }\n(0)\n",
		"reserved name":           "const __default = 1;\nexport default () => __default;\n",
		"using":                   "export default () => { using x = null; return 1; };\n",
		"accessor":                "class C { accessor x = 1 }\nexport default () => new C().x;\n",
		"jsx-like generic call":   "export default () => <T,>(x: T) => x;\n",
	} {
		if name == "jsx-like generic call" {
			continue // a generic arrow: valid TypeScript the fast path may take
		}
		if js, ok := strip("tools/x.ts", []byte(src)); ok {
			t.Errorf("%s: the fast path took it:\n%s", name, js)
		}
		out, err := New(0).Runnable("tools/x.ts", []byte(src))
		want, werr := New(0).Transpile("tools/x.ts", []byte(src))
		if out.Stripped || out.JS != want.JS || (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Errorf("%s: Runnable gave %q, %v; esbuild %q, %v", name, out.JS, err, want.JS, werr)
		}
	}
}

// TestStripTakesPlainTypeScript: the erasable syntax the fast path exists
// for is taken, and the program runs to esbuild's result.
func TestStripTakesPlainTypeScript(t *testing.T) {
	src := `/** Every erasable construct. */
import type { Foo } from './foo';
export type { Foo };
interface Shape { area(): number }
type Pair<T> = [T, T];
declare const ambient: number;
declare function ambientFn(): void;
abstract class Base<T> implements Shape {
  abstract kind: string;
  declare tag: string;
  protected readonly scale: number = 2;
  private count?: number;
  static made!: number;
  abstract area(): number;
  public override toString(): string { return "base"; }
  twice<U extends number>(u: U): number { return (u as number) * this.scale; }
}
class Square extends Base<number> implements Shape {
  kind = "square";
  constructor(public_side: number) { super(); this.side = public_side; }
  side!: number;
  area(): number { return this.side ** 2; }
}
function over(a: string): string;
function over(a: number): number;
function over(a: any): any { return a; }
const id = <T,>(x: T): T => x;
let maybe: number | undefined = 3;
const sure = maybe!;
const checked = { n: 1 } satisfies { n: number };
function opt(a?: number, ...rest: number[]): number { return (a ?? 0) + rest.length; }
export const exported: Pair<number> = [1, 2];
export function helper<T>(x: T): T { return x; }
export default function main(args: { n: number }): unknown {
  const s = new Square(args.n);
  return [s.area(), s.twice<number>(3), over(4), id<string>("x"), sure, checked.n, opt(), opt(1, 2, 3), exported, helper(5), s.kind];
}
`
	js, ok := strip("tools/all.ts", []byte(src))
	if !ok {
		t.Fatal("the fast path declined plain TypeScript")
	}
	out, err := New(0).Transpile("tools/all.ts", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want, got := runModule("tools/all.ts", out.JS, `{"n":3}`), runModule("tools/all.ts", js, `{"n":3}`)
	if want != got || want.Err != "" {
		t.Fatalf("esbuild: %+v\nfast path: %+v\n%s", want, got, js)
	}
	lines := strings.Count(src, "\n") + 1 // the wrapper's closing line
	if strings.Contains(js, "sourceMappingURL") {
		lines++ // the first line's map (not here: it holds only a comment)
	}
	if strings.Count(js, "\n") != lines {
		t.Fatalf("lines moved:\n%s", js)
	}
	r, err := New(0).Runnable("tools/all.ts", []byte(src))
	if err != nil || !r.Stripped || r.JS != js {
		t.Fatalf("Runnable did not take the fast path: %v %v", r.Stripped, err)
	}
}
