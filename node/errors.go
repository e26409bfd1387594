package node

import "errors"

// The kernel tools' errors. Their text keeps the "kernel:" prefix: they
// are the kernel tools' answers, as agents and logs have always seen them.

// ErrInvalidArgs: a kernel tool's arguments do not match its schema.
var ErrInvalidArgs = errors.New("kernel: invalid tool arguments")

// ErrUnknownTool: no kernel tool has the name.
var ErrUnknownTool = errors.New("kernel: unknown tool")

// ErrArgsTooLarge: a kernel tool's arguments are longer than the node's
// limit (Options.MaxArgsBytes). The error also wraps ErrInvalidArgs.
var ErrArgsTooLarge = errors.New("kernel: tool arguments too large")
