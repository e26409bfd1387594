// Package gitpb holds the wire messages of the git actor (git.proto) and
// their generated Go (git.pb.go). Callers do not use it directly:
// gitclient.Client (actors/git/client) converts between these messages and
// its domain types (Written, Synced).
package gitpb

//go:generate go run github.com/agentos-run/agentos/internal/protogen git.proto
