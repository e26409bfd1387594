package client

import (
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentos-run/agentos/actors/registry/registrypb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/vfs"
)

// Conversions from the registry actor's wire messages (registrypb) back to
// the domain types (toolmeta.Tool, toolmeta.Hit), and a Failure back to its
// sentinel error. The actor's side (to the wire) is in actors/registry.

// FailureCodes maps each sentinel error a registry reply can carry to its
// stable wire code, in the order the actor tries them (registry.failureOf). IMPORTANT: a code,
// once used, MUST keep its meaning: another node may be older.
var FailureCodes = system.FailureCodes{
	{Code: system.CodeUnauthenticated, Err: system.ErrUnauthenticated},
	{Code: "not_tool", Err: ErrNotTool},
	{Code: "not_registered", Err: ErrNotRegistered},
	{Code: "persist", Err: ErrPersist},
	{Code: "scan", Err: ErrScan},
	{Code: "closed", Err: ErrClosed},
	{Code: "options", Err: ErrOptions},
	{Code: "security", Err: vfs.ErrSecurity},
	{Code: "not_found", Err: vfs.ErrNotFound},
	{Code: "invalid_path", Err: vfs.ErrInvalidPath},
}

// errorOf returns the error a Failure stands for: its message, wrapping the
// sentinel its code names (errors.Is works); nil for nil.
func errorOf(f *registrypb.Failure) error {
	if f == nil {
		return nil
	}
	return FailureCodes.ErrorOf(f.GetCode(), f.GetMessage(), nil)
}

// toolFromPB returns the Tool p carries; the zero Tool for nil.
func toolFromPB(p *registrypb.Tool) toolmeta.Tool {
	if p == nil {
		return toolmeta.Tool{}
	}
	t := toolmeta.Tool{
		Path:        p.GetPath(),
		Name:        p.GetName(),
		Description: p.GetDescription(),
		Tags:        p.GetTags(),
		Hash:        p.GetHash(),
		Version:     int(p.GetVersion()),
		Usage:       int(p.GetUsage()),
		Created:     timeFromPB(p.GetCreated()),
		Updated:     timeFromPB(p.GetUpdated()),
	}
	if len(p.GetParameters()) > 0 {
		t.Parameters = json.RawMessage(p.GetParameters())
	}
	return t
}

// hitsFromPB returns the hits on the wire as domain Hits, never nil.
func hitsFromPB(ps []*registrypb.Hit) []toolmeta.Hit {
	hits := make([]toolmeta.Hit, 0, len(ps))
	for _, p := range ps {
		hits = append(hits, toolmeta.Hit{Tool: toolFromPB(p.GetTool()), Score: p.GetScore()})
	}
	return hits
}

func timeFromPB(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}
