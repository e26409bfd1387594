// Package forgepb holds the wire messages of the forge actor (forge.proto)
// and their generated Go (forge.pb.go). Callers do not use it directly:
// forge.Client converts between these messages and the forge's domain
// types.
package forgepb

//go:generate go run github.com/agentos-run/agentos/internal/protogen forge.proto
