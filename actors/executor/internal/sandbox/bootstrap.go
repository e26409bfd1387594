package sandbox

import "github.com/dop251/goja"

// bootstrapJS hardens a fresh runtime before any tool code runs. It is
// compiled once per process and called with (cfg, oom), where cfg.max is
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
var bootstrapJS = goja.MustCompile("agentos:bootstrap", `(function (cfg, oom) {
	'use strict';
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
	const typed = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
	for (let i = 0; i < typed.length; i++) {
		guard(typed[i], globalThis[typed[i]].BYTES_PER_ELEMENT);
	}
})`, true)
