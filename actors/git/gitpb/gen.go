// Package gitpb holds the wire messages of the git actor (git.proto) and
// their generated Go (git.pb.go). Callers do not use it directly: git.Client
// converts between these messages and the git package's domain types.
package gitpb

//go:generate go run github.com/agentos-run/agentos/internal/protogen git.proto
