package check

import (
	"context"
	"testing"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/agentos-run/agentos/internal/tsparse"
)

// kitchenSink uses most of TypeScript's syntax.
const kitchenSink = `import type { Foo } from './lib/foo';
import * as lib from './lib/x';
export interface P<T extends object = {}> { readonly a?: T; [k: string]: unknown }
type K = ` + "`prefix-${string}`" + `;
type M<T> = { [P in keyof T]-?: T[P] extends Function ? never : T[P] };
abstract class A<T> { protected abstract f(): void; static #priv = 1; accessor z = 1; }
const cfg = { a: 1, 'b': "x\n\u00e9", [k]: ` + "`t${1 + 2}u`" + ` } as const satisfies Record<string, unknown>;
namespace NS { export const y = 1; }
function over(a: string): string; function over(a: unknown): unknown { return a; }
const fn = async <T,>(x: T): Promise<T> => { await null; return x!; };
async function* gen() { yield 1; for await (const v of gen()) { label: break label; } }
let o = a?.b?.[c]?.(d) ?? e;
const { q, ...rest } = obj;
class D { @dec() m() { return this.constructor.name; } }
export default function run(args: { n: number }): number { return args.n > 2 ? -1 : 0x10 % 2; }
`

// TestFlattenKeepsEveryNode walks the tree with the plain go-tree-sitter
// API and compares it with the flattened copy: same nodes in the same
// order, same symbols, same positions where the rules read them, same
// parents.
func TestFlattenKeepsEveryNode(t *testing.T) {
	for _, src := range []string{fibTool, kitchenSink, "const x = ;\nlet = 'a", ""} {
		w := newWorker()
		if !w.parse([]byte(src)) {
			t.Fatal("parse failed")
		}
		p := sitter.NewParser()
		p.SetLanguage(tsparse.Language)
		tr, err := p.ParseCtx(context.Background(), nil, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		var want []*sitter.Node
		var parents []int
		var walk func(n *sitter.Node, parent int)
		walk = func(n *sitter.Node, parent int) {
			idx := len(want)
			want = append(want, n)
			parents = append(parents, parent)
			for k := 0; k < int(n.ChildCount()); k++ {
				walk(n.Child(k), idx)
			}
		}
		walk(tr.RootNode(), -1)
		got := w.tree.nodes
		if len(got) != len(want) {
			t.Fatalf("%q: flattened %d nodes, tree has %d", src, len(got), len(want))
		}
		for k, n := range want {
			g := got[k]
			if g.sym != uint16(n.Symbol()) || int(g.parent) != parents[k] {
				t.Fatalf("%q: node %d is sym %d parent %d, want %s parent %d", src, k, g.sym, g.parent, n.Type(), parents[k])
			}
			if positioned(g.kind) && (g.start != n.StartByte() || g.end != n.EndByte()) {
				t.Fatalf("%q: node %d (%s) at %d-%d, want %d-%d", src, k, n.Type(), g.start, g.end, n.StartByte(), n.EndByte())
			}
			if k > 0 && g.kind == kOther && g.named != n.IsNamed() {
				t.Fatalf("%q: node %d (%s) named = %v", src, k, n.Type(), g.named)
			}
		}
	}
}

func TestPos(t *testing.T) {
	tr := &tree{lines: []int{0, 4, 5, 10}}
	for _, tc := range []struct {
		off       uint32
		line, col int
	}{{0, 1, 1}, {3, 1, 4}, {4, 2, 1}, {5, 3, 1}, {9, 3, 5}, {10, 4, 1}, {42, 4, 33}} {
		if l, c := tr.pos(tc.off); l != tc.line || c != tc.col {
			t.Errorf("pos(%d) = %d:%d, want %d:%d", tc.off, l, c, tc.line, tc.col)
		}
	}
}
