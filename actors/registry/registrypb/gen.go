// Package registrypb holds the wire messages of the registry actor
// (registry.proto) and their generated Go (registry.pb.go). Callers do not
// use it directly: regclient.Client converts between these messages and the
// registry's domain types.
package registrypb

//go:generate go run github.com/agentos-run/agentos/internal/protogen registry.proto
