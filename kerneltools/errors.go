package kerneltools

import "errors"

// The kernel tools' errors. Their text keeps the "kernel:" prefix: they
// are the kernel tools' answers, as agents and logs have always seen them.
// kerneltool.ErrInvalidArgs and kerneltool.ErrUnknownTool are the leaf's (package kerneltool).

// ErrArgsTooLarge: a kernel tool's arguments are longer than the node's
// limit (Options.MaxArgsBytes). The error also wraps kerneltool.ErrInvalidArgs.
var ErrArgsTooLarge = errors.New("kernel: tool arguments too large")
