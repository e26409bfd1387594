// Package executorpb holds the wire messages of the executor actor
// (executor.proto) and their generated Go (executor.pb.go). Callers do not
// use it directly: client.Client (actors/executor/client) converts between these messages and the
// executor's domain types.
package executorpb

//go:generate go run github.com/agentos-run/agentos/internal/protogen executor.proto
