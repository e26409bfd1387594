// Package kernelpb holds the wire messages of the kernel actor
// (kernel.proto) and their generated Go (kernel.pb.go). Callers do not use
// it directly: the kernel client (actors/kernel/client) converts between these messages and the
// kernel's domain types.
package kernelpb

//go:generate go run github.com/agentos-run/agentos/internal/protogen kernel.proto
