package sandbox

import (
	"fmt"
	"strings"

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
// The replacer is built before any tool code runs, from the intrinsics as
// they were then: a tool replacing Map or Array.from cannot change it.
var replacerJS = goja.MustCompile("agentos:values", `(function (note) {
	'use strict';
	const apply = Reflect.apply, isProto = Object.prototype.isPrototypeOf, keys = Object.keys;
	const MapP = Map.prototype, SetP = Set.prototype, PromiseP = Promise.prototype, ErrorP = Error.prototype;
	const WeakMapP = WeakMap.prototype, WeakSetP = WeakSet.prototype, DataViewP = DataView.prototype;
	const mapEntries = MapP.entries, setValues = SetP.values, isView = ArrayBuffer.isView, from = Array.from;
	const isArray = Array.isArray, S = String;
	const paths = new Map();
	const where = (holder, key) => {
		const base = paths.get(holder);
		if (base === undefined) return 'result';
		return isArray(holder) ? base + '[' + key + ']' : (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? base + '.' + key : base + '[' + JSON.stringify(key) + ']');
	};
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
			const path = where(this, key);
			let out = v;
			if (apply(isProto, MapP, [v])) {
				out = {};
				const it = apply(mapEntries, v, []);
				for (let e = it.next(); !e.done; e = it.next()) {
					const k = e.value[0];
					if (typeof k !== 'string' && typeof k !== 'number') {
						return fail(path, 'a Map whose keys are not strings or numbers has no JSON form: return Array.from(map) (its [key, value] pairs) instead');
					}
					out[S(k)] = e.value[1];
				}
			} else if (apply(isProto, SetP, [v])) {
				out = from(apply(setValues, v, []));
			} else if (isView(v) && !apply(isProto, DataViewP, [v])) {
				out = from(v);
			} else if (apply(isProto, ErrorP, [v])) {
				out = { name: S(v.name), message: S(v.message) };
				const own = keys(v);
				for (let i = 0; i < own.length; i++) out[own[i]] = v[own[i]];
			} else if (apply(isProto, PromiseP, [v])) {
				return fail(path, 'a Promise has no JSON form: await it before returning');
			} else if (apply(isProto, WeakMapP, [v]) || apply(isProto, WeakSetP, [v])) {
				return fail(path, 'a WeakMap or WeakSet cannot be read, so it has no JSON form: use a Map or Set');
			}
			paths.set(out, path);
			return out;
		}
		}
		return v;
	};
})`, true)

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
	if n.counts[kind] == 0 {
		n.first[kind], n.text[kind] = path, text
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
