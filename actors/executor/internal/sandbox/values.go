package sandbox

import (
	"fmt"
	"github.com/agentos-run/agentos/internal/clip"
	"strings"
	"sync"

	"github.com/dop251/goja"
)

// How values cross the boundary (see docs/SANDBOX.md, "Values across the
// boundary"). A tool's result, and objects it logs, become JSON through
// JSON.stringify with replacerJS, which keeps what plain JSON would lose or
// garble:
//
//   - Map with string (or number) keys -> an object; with other keys -> an
//     error saying how to convert it;
//   - Set -> an array; a typed array (Uint8Array ...) -> an array of numbers;
//   - BigInt -> an error saying to return Number(n) or String(n) (JSON has
//     no integers beyond 2^53, and a silent conversion would lose digits);
//   - an Error -> {name, message, ...its own enumerable properties};
//   - NaN, Infinity, -Infinity -> null, with a warning in the run's logs;
//   - a function or symbol as a property -> omitted, with a warning; as the
//     whole result -> an error;
//   - a Promise (a value not awaited), WeakMap, WeakSet -> an error;
//   - undefined -> omitted from objects, null in arrays and as the result
//     (JSON's own rule); a Date -> its ISO string (Date.prototype.toJSON).
//
// The replacer is built before any tool code runs, but reaches Map, Set and
// Array.from only when a value needs them (goja builds them lazily, at a
// cost): a tool that replaces them can garble only its own result.
var replacerJS = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile("agentos:values", `(function (note) {
	'use strict';
	// IMPORTANT: touch no intrinsic goja builds lazily (Map, Set, Promise,
	// typed arrays ...) here or on the way of plain data: building one costs
	// tens of microseconds, on every run. They are reached only when the
	// value at hand is one (its toStringTag says so).
	const apply = Reflect.apply, keys = Object.keys, getProto = Object.getPrototypeOf, OP = Object.prototype;
	const tag = OP.toString, isArray = Array.isArray, S = String, quote = JSON.stringify;
	// The objects being written, as a stack with where each sits (the index
	// of its holder and its key): JSON.stringify walks depth first, so the
	// holder of a key is on it, and what lies above the holder is finished.
	// A path is written out only for a message.
	const holders = [], parents = [], keysOf = [];
	const at = (holder) => {
		let i = holders.length - 1;
		while (i >= 0 && holders[i] !== holder) i--;
		holders.length = parents.length = keysOf.length = i + 1;
		return i;
	};
	const render = (i, key) => {
		const parts = [], ident = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
		for (; i >= 0; key = keysOf[i], i = parents[i]) {
			if (isArray(holders[i])) parts.push('[' + key + ']');
			else if (apply(ident.test, ident, [key])) parts.push('.' + key);
			else parts.push('[' + quote(key) + ']');
		}
		let out = 'result';
		for (let k = parts.length - 1; k >= 0; k--) out += parts[k];
		return out;
	};
	const where = (holder, key) => render(at(holder), key);
	const fail = (path, msg) => { throw new TypeError(path + ': ' + msg); };
	return function (key, v) {
		switch (typeof v) {
		case 'number':
			if (v !== v || v === Infinity || v === -Infinity) {
				note('nonfinite', where(this, key), S(v));
				return null;
			}
			return v;
		case 'bigint':
			return fail(where(this, key), 'the BigInt ' + S(v) + 'n has no JSON form: return Number(n) when it is exact as a number (|n| <= 2^53), or String(n)');
		case 'function':
		case 'symbol': {
			const path = where(this, key);
			if (path === 'result') return fail(path, 'the tool returned a ' + typeof v + ', which has no JSON form: return data (an object, array, string, number, boolean or null)');
			note('dropped', path, typeof v);
			return undefined;
		}
		case 'object': {
			if (v === null) return v;
			const parent = at(this);
			const path = () => render(parent, key);
			let out = v;
			if (!isArray(v) && getProto(v) !== OP) {
				switch (apply(tag, v, [])) {
				case '[object Map]': {
					out = {};
					const it = apply(Map.prototype.entries, v, []);
					for (let e = it.next(); !e.done; e = it.next()) {
						const k = e.value[0];
						if (typeof k !== 'string' && typeof k !== 'number') {
							return fail(path(), 'a Map whose keys are not strings or numbers has no JSON form: return Array.from(map) (its [key, value] pairs) instead');
						}
						out[S(k)] = e.value[1];
					}
					break;
				}
				case '[object Set]':
					out = Array.from(apply(Set.prototype.values, v, []));
					break;
				case '[object Int8Array]': case '[object Uint8Array]': case '[object Uint8ClampedArray]':
				case '[object Int16Array]': case '[object Uint16Array]': case '[object Int32Array]':
				case '[object Uint32Array]': case '[object Float32Array]': case '[object Float64Array]':
				case '[object BigInt64Array]': case '[object BigUint64Array]':
					out = Array.from(v);
					break;
				case '[object Error]': {
					out = { name: S(v.name), message: S(v.message) };
					const own = keys(v);
					for (let i = 0; i < own.length; i++) out[own[i]] = v[own[i]];
					break;
				}
				case '[object Promise]':
					return fail(path(), 'a Promise has no JSON form: await it before returning');
				case '[object WeakMap]': case '[object WeakSet]':
					return fail(path(), 'a WeakMap or WeakSet cannot be read, so it has no JSON form: use a Map or Set');
				}
			}
			holders.push(out);
			parents.push(parent);
			keysOf.push(key);
			return out;
		}
		}
		return v;
	};
})`, true)
})

// maxNotedText bounds the path and the value a warning names.
const maxNotedText = 1 << 10

// valueNotes collects what turning a result into JSON changed, as warnings.
type valueNotes struct {
	counts map[string]int
	first  map[string]string // kind -> first path
	text   map[string]string // kind -> the first value's text
}

func (n *valueNotes) add(kind, path, text string) {
	if n.counts == nil {
		n.counts, n.first, n.text = map[string]int{}, map[string]string{}, map[string]string{}
	}
	if n.counts[kind] == 0 { // a warning names them: bounded, however long a key is
		n.first[kind], n.text[kind] = clip.N(path, maxNotedText), clip.N(text, maxNotedText)
	}
	n.counts[kind]++
}

// warnings renders the notes as log lines.
func (n *valueNotes) warnings() []string {
	var out []string
	if c := n.counts["nonfinite"]; c > 0 {
		out = append(out, fmt.Sprintf("warn: %s is %s, which JSON cannot hold: it was returned as null%s", n.first["nonfinite"], n.text["nonfinite"], more(c)))
	}
	if c := n.counts["dropped"]; c > 0 {
		out = append(out, fmt.Sprintf("warn: %s is a %s, which JSON cannot hold: it was left out of the result%s", n.first["dropped"], n.text["dropped"], more(c)))
	}
	return out
}

func more(c int) string {
	if c <= 1 {
		return ""
	}
	return fmt.Sprintf(" (and %d more such value%s)", c-1, strings.Repeat("s", min(c-2, 1)))
}
