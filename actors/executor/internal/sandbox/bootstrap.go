package sandbox

import (
	"sync"

	"github.com/dop251/goja"
)

// bootstrapJS hardens a fresh runtime before any tool code runs. It is
// compiled once per process, on first use (not at package initialisation,
// which every start of the binary pays), and called with (cfg, oom), where cfg.max is
// the run's memory limit in bytes (set when the runtime is taken for a run):
//
//   - the Function, AsyncFunction and GeneratorFunction constructors are
//     replaced through the prototypes (deleting the globals is not enough:
//     (function(){}).constructor reaches them), and so is eval;
//   - when cfg.guard is set (in-process runs, where no RLIMIT_AS protects
//     the host), the built-ins that make one huge allocation in a single
//     step check their size first and end the run with a memory error (oom)
//     instead of a fatal Go error that would kill the process. A worker
//     process skips these guards: its address-space limit ends such a run,
//     and the guards would cost every run ~150 µs of goja initialisation.
var bootstrapJS = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile("agentos:bootstrap", `(function (cfg, oom) {
	'use strict';
	// The built-ins the guards call, taken before any tool code runs: a tool
	// that replaces Reflect.apply or Number must not be handed the originals
	// or fool a check.
	const apply = Reflect.apply, construct = Reflect.construct, get = Reflect.get, N = Number, O = Object, S = String, isArray = Array.isArray;
	const isProto = Object.prototype.isPrototypeOf;
	const deny = function () {
		throw new EvalError('code generation from strings is disabled in the agentos sandbox (eval, Function and their constructors): write the logic as ordinary functions');
	};
	const lock = (obj, key, value) => Object.defineProperty(obj, key, { value, writable: false, enumerable: false, configurable: false });
	deny.prototype = Object.getPrototypeOf(function () {});
	lock(Object.getPrototypeOf(function () {}), 'constructor', deny);
	lock(Object.getPrototypeOf(async function () {}), 'constructor', deny);
	lock(Object.getPrototypeOf(function* () {}), 'constructor', deny);
	lock(globalThis, 'Function', deny);
	lock(globalThis, 'eval', deny);

	if (!cfg.guard) return;
	// Taken here, not above: goja builds Symbol lazily, and a worker's
	// runtime (no guards) need not pay for it.
	const symHasInstance = Symbol.hasInstance;
	const check = (bytes, what) => {
		if (bytes > cfg.max) {
			oom(bytes, what);
			throw new RangeError(what + ' would allocate ' + bytes + ' bytes, over the memory limit');
		}
	};
	const SP = String.prototype;
	const repeat = SP.repeat, padStart = SP.padStart, padEnd = SP.padEnd;
	const wrap = (name, fn) => Object.defineProperty(SP, name, { value: fn, writable: true, enumerable: false, configurable: true });
	wrap('repeat', function repeat_(count) {
		check(S(this).length * 2 * N(count), 'String.prototype.repeat');
		return apply(repeat, this, arguments);
	});
	wrap('padStart', function padStart_(len) {
		check(2 * N(len), 'String.prototype.padStart');
		return apply(padStart, this, arguments);
	});
	wrap('padEnd', function padEnd_(len) {
		check(2 * N(len), 'String.prototype.padEnd');
		return apply(padEnd, this, arguments);
	});
	// goja cannot run 'x instanceof P' for a Proxy P of a constructor (it
	// throws a TypeError), so each guarded constructor answers
	// Symbol.hasInstance itself, as OrdinaryHasInstance would.
	const hasInstance = function (v) { return apply(isProto, this.prototype, [v]); };
	const getter = (target, key, receiver) => key === symHasInstance ? hasInstance : get(target, key, receiver);
	const guard = (name, perElement) => {
		const C = globalThis[name];
		if (typeof C !== 'function') return;
		globalThis[name] = new Proxy(C, {
			construct(target, args, newTarget) {
				if (typeof args[0] === 'number') check(args[0] * perElement, name);
				return construct(target, args, newTarget);
			},
			get: getter,
		});
	};
	guard('ArrayBuffer', 1);
	guard('SharedArrayBuffer', 1);
	const typed = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
	for (let i = 0; i < typed.length; i++) {
		guard(typed[i], globalThis[typed[i]].BYTES_PER_ELEMENT);
	}

	// Arrays. goja's array built-ins loop over 'length' natively, without
	// looking at the interrupt flag: new Array(1e9).fill(0), a join of 2**28
	// holes or Array.from({length: 2e9}) ran for minutes past their deadline
	// and grew the host's heap by gigabytes. Each element costs at least one
	// 16-byte slot, so an array (or array-like) longer than max/16 cannot be
	// worked on within the limit: refuse it before the native loop starts.
	const SLOT = 16;
	const lengthOf = (o) => {
		if (o === null || o === undefined) return 0;
		const n = N(O(o).length);
		return n > 0 ? n : 0;
	};
	const A = Array, AP = Array.prototype;
	const GuardedArray = new Proxy(A, {
		apply(target, self, args) {
			if (args.length === 1 && typeof args[0] === 'number') check(args[0] * SLOT, 'Array(' + args[0] + ')');
			return apply(target, self, args);
		},
		construct(target, args, newTarget) {
			if (args.length === 1 && typeof args[0] === 'number') check(args[0] * SLOT, 'new Array(' + args[0] + ')');
			return construct(target, args, newTarget === GuardedArray ? target : newTarget);
		},
		get: getter,
	});
	globalThis.Array = GuardedArray;
	Object.defineProperty(AP, 'constructor', { value: GuardedArray, writable: true, enumerable: false, configurable: true });
	const from = A.from;
	Object.defineProperty(A, 'from', { value: function from_(items) {
		check(lengthOf(items) * SLOT, 'Array.from');
		return apply(from, this === GuardedArray ? A : this, arguments);
	}, writable: true, enumerable: false, configurable: true });
	const iterating = ['fill', 'join', 'toString', 'toLocaleString', 'indexOf', 'lastIndexOf', 'includes',
		'reverse', 'sort', 'slice', 'splice', 'concat', 'copyWithin', 'flat', 'flatMap', 'forEach', 'map',
		'filter', 'some', 'every', 'find', 'findIndex', 'findLast', 'findLastIndex', 'reduce', 'reduceRight',
		'shift', 'unshift', 'toReversed', 'toSorted', 'toSpliced', 'with'];
	for (let i = 0; i < iterating.length; i++) {
		const name = iterating[i];
		const fn = AP[name];
		if (typeof fn !== 'function') continue;
		const what = 'Array.prototype.' + name;
		Object.defineProperty(AP, name, { value: { [name]: function () {
			let n = lengthOf(this);
			if (name === 'concat') {
				for (let k = 0; k < arguments.length; k++) n += isArray(arguments[k]) ? lengthOf(arguments[k]) : 1;
			}
			check(n * SLOT, what);
			return apply(fn, this, arguments);
		} }[name], writable: true, enumerable: false, configurable: true });
	}
})`, true)
})
