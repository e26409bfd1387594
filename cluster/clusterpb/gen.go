// Package clusterpb holds the wire messages of a member's status endpoint
// (cluster.proto) and their generated Go (cluster.pb.go). Callers use
// cluster.Member.ClusterStatus, not these types directly.
package clusterpb

//go:generate go run github.com/agentos-run/agentos/internal/protogen cluster.proto
