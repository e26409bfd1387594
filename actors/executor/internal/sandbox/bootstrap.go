package sandbox

import "github.com/dop251/goja"

// bootstrapJS hardens a fresh runtime before any tool code runs. It is
// compiled once per process and called with (maxBytes, oom):
//
//   - the Function, AsyncFunction and GeneratorFunction constructors are
//     replaced through the prototypes (deleting the globals is not enough:
//     (function(){}).constructor reaches them), and so is eval;
//   - the built-ins that make one huge allocation in a single step check
//     their size first and end the run with a memory error (oom) instead of
//     a fatal Go error that would kill the process.
var bootstrapJS = goja.MustCompile("agentos:bootstrap", `(function (maxBytes, oom) {
	'use strict';
	const deny = function () {
		throw new EvalError('code generation from strings is disabled in the agentos sandbox (eval, Function and their constructors): write the logic as ordinary functions');
	};
	const lock = (obj, key, value) => Object.defineProperty(obj, key, { value, writable: false, enumerable: false, configurable: false });
	deny.prototype = Object.getPrototypeOf(function () {});
	for (const f of [function () {}, async function () {}, function* () {}]) {
		lock(Object.getPrototypeOf(f), 'constructor', deny);
	}
	lock(globalThis, 'Function', deny);
	lock(globalThis, 'eval', deny);

	const check = (bytes, what) => {
		if (bytes > maxBytes) {
			oom(bytes, what);
			throw new RangeError(what + ' would allocate ' + bytes + ' bytes, over the memory limit');
		}
	};
	const SP = String.prototype;
	const repeat = SP.repeat, padStart = SP.padStart, padEnd = SP.padEnd;
	const wrap = (name, fn) => Object.defineProperty(SP, name, { value: fn, writable: true, enumerable: false, configurable: true });
	wrap('repeat', function repeat_(count) {
		check(String(this).length * 2 * Number(count), 'String.prototype.repeat');
		return Reflect.apply(repeat, this, arguments);
	});
	wrap('padStart', function padStart_(len) {
		check(2 * Number(len), 'String.prototype.padStart');
		return Reflect.apply(padStart, this, arguments);
	});
	wrap('padEnd', function padEnd_(len) {
		check(2 * Number(len), 'String.prototype.padEnd');
		return Reflect.apply(padEnd, this, arguments);
	});
	const guard = (name, perElement) => {
		const C = globalThis[name];
		if (typeof C !== 'function') return;
		globalThis[name] = new Proxy(C, {
			construct(target, args, newTarget) {
				if (typeof args[0] === 'number') check(args[0] * perElement, name);
				return Reflect.construct(target, args, newTarget);
			},
		});
	};
	guard('ArrayBuffer', 1);
	guard('SharedArrayBuffer', 1);
	for (const n of ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
		guard(n, globalThis[n].BYTES_PER_ELEMENT);
	}
})`, true)
