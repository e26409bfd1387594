package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dop251/goja"
)

// TestGojaPromiseSemantics pins what third_party/goja's promise changes
// (NewPromise resolving without JS function objects; promiseResolve of
// %Promise% without a capability) MUST keep: the job order of awaits of
// values, promises and thenables, Promise.resolve, and a Go-made promise
// resolved once, adopting a thenable, refusing itself. The expected orders
// are the specification's (and upstream goja's, which passes this test).
func TestGojaPromiseSemantics(t *testing.T) {
	vm := goja.New()
	run := func(src string) string {
		t.Helper()
		v, err := vm.RunString(src)
		if err != nil {
			t.Fatal(err)
		}
		return v.String()
	}
	if _, err := vm.RunString(`
		var log = [];
		var thenable = { then(r) { log.push('then'); r('t'); } };
		(async () => { log.push('a1'); const v = await thenable; log.push('a2:' + v); const w = await 5; log.push('a3:' + w); })();
		(async () => { await Promise.resolve(1); log.push('b1'); await null; log.push('b2'); })();
		Promise.resolve(thenable).then(v => log.push('r:' + v));
		Promise.resolve().then(() => log.push('p1')).then(() => log.push('p2')).then(() => log.push('p3')).then(() => log.push('p4'));
		log.push('sync');`); err != nil {
		t.Fatal(err)
	}
	// The jobs ran when RunString left the runtime.
	got := run(`log.join(',')`)
	if want := "a1,sync,then,b1,then,p1,a2:t,b2,r:t,p2,a3:5,p3,p4"; got != want {
		t.Fatalf("job order %s\nwant          %s", got, want)
	}

	p, resolve, reject := vm.NewPromise()
	vm.Set("p", p)
	if _, err := vm.RunString(`var seen = []; p.then(v => seen.push('ok:' + v), e => seen.push('err:' + e));`); err != nil {
		t.Fatal(err)
	}
	th, err := vm.RunString(`({ then(r) { r('adopted'); } })`)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{func() error { return resolve(th) }, func() error { return resolve("second") }, func() error { return reject("late") }} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if got := run(`seen.join(',')`); got != "ok:adopted" {
		t.Fatalf("a Go-made promise resolved with a thenable, then again, then rejected: %s, want ok:adopted", got)
	}
	if p.State() != goja.PromiseStateFulfilled || p.Result().String() != "adopted" {
		t.Fatalf("state %v result %v", p.State(), p.Result())
	}

	self, resolveSelf, _ := vm.NewPromise()
	if err := resolveSelf(self); err != nil {
		t.Fatal(err)
	}
	if self.State() != goja.PromiseStateRejected || !strings.Contains(self.Result().String(), "self-resolution") {
		t.Fatalf("a promise resolved with itself: %v %v, want rejected with a TypeError", self.State(), self.Result())
	}
}

// TestGojaStackAcrossEntries: values left on goja's stack by one entry
// into the runtime are not seen by the next (third_party/goja keeps a
// small stack across entries, clearing it), after shallow and deep calls.
func TestGojaStackAcrossEntries(t *testing.T) {
	vm := goja.New()
	if _, err := vm.RunString(`
		function deep(n) { return n === 0 ? 0 : 1 + deep(n - 1); }
		var got = [];
		async function loop(depth) { for (let i = 0; i < 3; i++) { const v = await next(); got.push(v + ':' + deep(depth)); } }`); err != nil {
		t.Fatal(err)
	}
	for _, depth := range []int{3, 5000, 3} {
		var resolves []func(any) error
		vm.Set("next", func() *goja.Promise {
			p, resolve, _ := vm.NewPromise()
			resolves = append(resolves, resolve)
			return p
		})
		if _, err := vm.RunString(fmt.Sprintf("got = []; loop(%d)", depth)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := resolves[i](fmt.Sprint("v", i)); err != nil {
				t.Fatal(err)
			}
		}
		want := fmt.Sprintf("v0:%d,v1:%d,v2:%d", depth, depth, depth)
		if got := vm.Get("got").Export(); strings.Join(toStrings(got), ",") != want {
			t.Fatalf("depth %d: %v, want %s", depth, got, want)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}
