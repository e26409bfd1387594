package registry

import (
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/actors/registry/registrypb"
)

// The client's side of the wire (actors/registry/client), for the tests of
// the actor's side: a tool and a failure back from their messages.

// errorOf is the error a Failure stands for (nil for nil).
func errorOf(f *registrypb.Failure) error {
	if f == nil {
		return nil
	}
	return regclient.FailureCodes.ErrorOf(f.GetCode(), f.GetMessage(), nil)
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

func timeFromPB(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}
