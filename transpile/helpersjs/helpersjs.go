// Package helpersjs holds the JavaScript of the esbuild runtime helpers the
// sandbox prepares once per runtime (see transpile.HelpersJS), apart from
// the transpiler, so that the sandbox worker (cmd/agentos-worker) links it
// without esbuild.
package helpersjs

// JS is a function expression returning the esbuild runtime helpers that
// CommonJS output uses (__export, __toCommonJS, __toESM, ...): see
// transpile.HelpersJS, which is JS.
const JS = `(function () {
  var __create = Object.create;
  var __defProp = Object.defineProperty;
  var __getOwnPropDesc = Object.getOwnPropertyDescriptor;
  var __getOwnPropNames = Object.getOwnPropertyNames;
  var __getProtoOf = Object.getPrototypeOf;
  var __hasOwnProp = Object.prototype.hasOwnProperty;
  var __export = function (target, all) {
    for (var name in all) __defProp(target, name, { get: all[name], enumerable: true });
  };
  var __copyProps = function (to, from, except, desc) {
    if (from && typeof from === "object" || typeof from === "function") {
      var keys = __getOwnPropNames(from);
      for (var i = 0; i < keys.length; i++) {
        let key = keys[i];
        if (!__hasOwnProp.call(to, key) && key !== except)
          __defProp(to, key, { get: () => from[key], enumerable: !(desc = __getOwnPropDesc(from, key)) || desc.enumerable });
      }
    }
    return to;
  };
  var __reExport = function (target, mod, secondTarget) {
    return (__copyProps(target, mod, "default"), secondTarget && __copyProps(secondTarget, mod, "default"));
  };
  var __toESM = function (mod, isNodeMode, target) {
    target = mod != null ? __create(__getProtoOf(mod)) : {};
    return __copyProps(isNodeMode || !mod || !mod.__esModule ? __defProp(target, "default", { value: mod, enumerable: true }) : target, mod);
  };
  var __toCommonJS = function (mod) {
    return __copyProps(__defProp({}, "__esModule", { value: true }), mod);
  };
  return { __create, __defProp, __getOwnPropDesc, __getOwnPropNames, __getProtoOf, __hasOwnProp,
    __export, __copyProps, __reExport, __toESM, __toCommonJS };
})()`
