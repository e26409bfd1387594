package registry

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/actors/registry/registrypb"
)

// Conversions from the domain types to the wire messages (registrypb), and
// errors as Failure{code, message}: the actor's side. The client's side
// (back from the wire) is in actors/registry/client.

// failureOf returns err as a wire Failure; nil for nil.
func failureOf(err error) *registrypb.Failure {
	if err == nil {
		return nil
	}
	return &registrypb.Failure{Code: regclient.FailureCodes.CodeOf(err), Message: err.Error()}
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

func timeToPB(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
