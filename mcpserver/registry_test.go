package mcpserver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/mcpserver"
)

// TestNewRefusesARegistryItCannotAsk: the server reaches the registry only
// through its actor's client. Without a client (or one with no PID or no
// sender) New says which option is missing; with a client of a registry
// actor that does not answer, New fails with regclient.ErrUnavailable
// instead of serving an empty tool list.
func TestNewRefusesARegistryItCannotAsk(t *testing.T) {
	e := newEnv(t, host.Config{})
	good := e.rt.Node().RegistryClient()
	for name, reg := range map[string]*regclient.Client{
		"no registry": nil,
		"no PID":      {Root: good.Root},
		"no sender":   {PID: good.PID},
	} {
		srv, err := mcpserver.New(mcpserver.Options{Node: e.rt.Node(), Registry: reg, Logger: quiet})
		if !errors.Is(err, mcpserver.ErrOptions) {
			if srv != nil {
				_ = srv.Close()
			}
			t.Errorf("%s: New answered %v, want ErrOptions", name, err)
		}
	}

	gone := *good
	gone.PID = actor.NewPID(good.PID.GetAddress(), good.PID.GetId()+"-gone")
	gone.Timeout = 5 * time.Second
	srv, err := mcpserver.New(mcpserver.Options{Node: e.rt.Node(), Registry: &gone, Logger: quiet})
	if !errors.Is(err, regclient.ErrUnavailable) {
		if srv != nil {
			_ = srv.Close()
		}
		t.Fatalf("New with a registry actor that does not answer: %v, want ErrUnavailable", err)
	}
}
