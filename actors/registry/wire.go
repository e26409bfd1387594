package registry

import (
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentos-run/agentos/actors/registry/registrypb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/vfs"
)

// Conversions between the domain types and the wire messages
// (registrypb), and errors as Failure{code, message}.

// failureCodes maps each sentinel error a registry reply can carry to its
// stable wire code, in the order failureOf tries them. IMPORTANT: a code,
// once used, MUST keep its meaning: another node may be older.
var failureCodes = system.FailureCodes{
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

// failureOf returns err as a wire Failure; nil for nil.
func failureOf(err error) *registrypb.Failure {
	if err == nil {
		return nil
	}
	return &registrypb.Failure{Code: failureCodes.CodeOf(err), Message: err.Error()}
}

// errorOf returns the error a Failure stands for: its message, wrapping the
// sentinel its code names (errors.Is works); nil for nil.
func errorOf(f *registrypb.Failure) error {
	if f == nil {
		return nil
	}
	return failureCodes.ErrorOf(f.GetCode(), f.GetMessage(), nil)
}

// toolToPB returns t on the wire.
func toolToPB(t Tool) *registrypb.Tool {
	return &registrypb.Tool{
		Path:        t.Path,
		Name:        t.Name,
		Description: t.Description,
		Parameters:  []byte(t.Parameters),
		Tags:        t.Tags,
		Hash:        t.Hash,
		Version:     int64(t.Version),
		Usage:       int64(t.Usage),
		Created:     timeToPB(t.Created),
		Updated:     timeToPB(t.Updated),
	}
}

// toolFromPB returns the Tool p carries; the zero Tool for nil.
func toolFromPB(p *registrypb.Tool) Tool {
	if p == nil {
		return Tool{}
	}
	t := Tool{
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
func hitsFromPB(ps []*registrypb.Hit) []Hit {
	hits := make([]Hit, 0, len(ps))
	for _, p := range ps {
		hits = append(hits, Hit{Tool: toolFromPB(p.GetTool()), Score: p.GetScore()})
	}
	return hits
}

func timeToPB(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func timeFromPB(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}
