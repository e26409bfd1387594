// Package capabilitypb holds the wire form of capability revocations
// (capability.proto) and its generated Go (capability.pb.go). Callers use
// capability.Revocation and its conversions (Revocation.Proto,
// RevocationFromProto), not these types directly.
package capabilitypb

//go:generate go run github.com/agentos-run/agentos/internal/protogen capability.proto
