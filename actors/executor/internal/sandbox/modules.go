package sandbox

// CommonJS modules: loading a module once per run, and require through the
// Bridge.

import (
	"errors"
	"strings"

	"github.com/dop251/goja"
)

// load runs a module (once per run) and returns its exports object.
func (r *run) load(m Module) (*goja.Object, error) {
	if mod, ok := r.mods[m.Path]; ok {
		return mod.Get("exports").ToObject(r.vm), nil
	}
	prog, err := r.e.program(m)
	if err != nil {
		return nil, errorf(KindCompile, "%s: %v", m.Path, err)
	}
	vm := r.vm
	module := vm.NewObject()
	exports := vm.NewObject()
	module.Set("exports", exports)
	r.mods[m.Path] = module // before running: cycles see the partial exports
	wrapper, err := vm.RunProgram(prog)
	if err != nil {
		delete(r.mods, m.Path)
		return nil, err
	}
	fn, ok := goja.AssertFunction(wrapper)
	if !ok {
		return nil, errorf(KindInternal, "%s: transpiled module is not a function", m.Path)
	}
	dir := m.Path[:max(strings.LastIndexByte(m.Path, '/'), 0)]
	if _, err := fn(goja.Undefined(), exports, vm.ToValue(r.requireFrom(m.Path)), module, vm.ToValue(m.Path), vm.ToValue(dir), r.helpers); err != nil {
		delete(r.mods, m.Path) // a retried require must not get half-run exports
		return nil, err
	}
	return module.Get("exports").ToObject(vm), nil
}

func (r *run) requireFrom(from string) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		spec, ok := c.Argument(0).Export().(string)
		if !ok {
			panic(r.throw("invalid_argument", "require(id): id must be a string literal path like './lib/math'"))
		}
		m, err := r.br.Require(r.ctx, from, spec)
		if err != nil {
			panic(r.jsError(err))
		}
		exports, err := r.load(m)
		if err != nil {
			panic(r.rethrow(err))
		}
		return exports
	}
}

// rethrow turns an error from a nested load into a value to panic with, so
// a tool can catch a failed require, while uncatchable errors stay so.
func (r *run) rethrow(err error) any {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return ex
	}
	var e *Error
	if errors.As(err, &e) {
		return r.throw(string(e.Kind), e.Message)
	}
	return err
}
