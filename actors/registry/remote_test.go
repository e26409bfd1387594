package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	regclient "github.com/agentos-run/agentos/actors/registry/client"
	pb "github.com/agentos-run/agentos/actors/registry/registrypb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/vfs"
)

// The registry protocol: each request and its reply ("" for none), and the
// messages that only travel inside others.
var (
	protocol = map[protoreflect.Name]protoreflect.Name{
		"Register": "Registered",
		"Search":   "SearchResult",
		"Get":      "Got",
		"List":     "Listed",
		"Used":     "Counted",
	}
	parts = []protoreflect.Name{"Tool", "Hit", "Failure"}
)

// TestMessagesCrossNodes runs system.CheckRemote over every message of
// registry.proto (iterating its file descriptor, so a message added to the
// .proto is checked too), fails when a message is neither a request, a
// reply nor a part listed above, and sends every request, encoded and
// decoded as on the wire, to the actor, which must answer with its reply
// type.
func TestMessagesCrossNodes(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	_, c := startActor(t, r)

	known := map[protoreflect.Name]bool{}
	for req, rep := range protocol {
		known[req] = true
		if rep != "" {
			known[rep] = true
		}
	}
	for _, p := range parts {
		known[p] = true
	}
	msgs := pb.File_actors_registry_registrypb_registry_proto.Messages()
	if msgs.Len() != len(known) {
		t.Errorf("registry.proto defines %d messages, the protocol above lists %d", msgs.Len(), len(known))
	}
	for i := 0; i < msgs.Len(); i++ {
		d := msgs.Get(i)
		if !known[d.Name()] {
			t.Errorf("%s is in registry.proto but not in this test's protocol: list it as a request (with its reply) or a part", d.FullName())
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
		if err != nil {
			t.Fatalf("%s: %v", d.FullName(), err)
		}
		if err := system.CheckRemote(mt.New().Interface()); err != nil {
			t.Error(err)
		}
		rep, isReq := protocol[d.Name()]
		if !isReq {
			continue
		}
		// As a remote node would: marshal, unmarshal, send.
		b, err := proto.Marshal(mt.New().Interface())
		if err != nil {
			t.Fatal(err)
		}
		msg := mt.New().Interface()
		if err := proto.Unmarshal(b, msg); err != nil {
			t.Fatal(err)
		}
		if rep == "" {
			c.Root.Send(c.PID, msg)
			continue
		}
		res, err := c.Root.RequestFuture(c.PID, msg, 5*time.Second).Result()
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		got, ok := res.(proto.Message)
		if !ok || got.ProtoReflect().Descriptor().Name() != rep {
			t.Errorf("%s answered %T, want %s", d.Name(), res, rep)
			continue
		}
		if err := system.CheckRemote(got); err != nil {
			t.Error(err)
		}
	}
}

// TestToolOnTheWire: a Tool survives the wire (every field, times included)
// and the zero Tool stays zero.
func TestToolOnTheWire(t *testing.T) {
	in := Tool{
		Path: "tools/math/fib.ts", Name: "fib", Description: "Fibonacci.",
		Parameters: json.RawMessage(`{"type":"object"}`), Tags: []string{"math", "seq"},
		Hash: "h1", Version: 3, Usage: 7,
		Created: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Updated: time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC),
	}
	b, err := proto.Marshal(toolToPB(in))
	if err != nil {
		t.Fatal(err)
	}
	var p pb.Tool
	if err := proto.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if out := toolFromPB(&p); !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
	if out := toolFromPB(toolToPB(Tool{})); !reflect.DeepEqual(out, Tool{}) {
		t.Fatalf("zero Tool: %+v", out)
	}
}

// TestFailureOnTheWire: every sentinel a reply can carry comes back from
// its Failure with errors.Is working and the full message kept; an error
// wrapping none comes back as "internal" with its message.
func TestFailureOnTheWire(t *testing.T) {
	for _, c := range regclient.FailureCodes {
		err := fmt.Errorf("%w: tools/x.ts: what to do", c.Err)
		f := failureOf(err)
		if f.GetCode() != c.Code {
			t.Errorf("%v: code %q, want %q", c.Err, f.GetCode(), c.Code)
		}
		back := errorOf(f)
		if !errors.Is(back, c.Err) || back.Error() != err.Error() {
			t.Errorf("%v: came back as %v", c.Err, back)
		}
	}
	back := errorOf(failureOf(errors.New("disk on fire")))
	if back == nil || back.Error() != "disk on fire" || errors.Is(back, regclient.ErrPersist) {
		t.Errorf("unknown error came back as %v", back)
	}
	if failureOf(nil) != nil || errorOf(nil) != nil {
		t.Error("nil error did not stay nil")
	}
	// A vfs error from Register (a path escaping the root) keeps its sentinel.
	rt := newRoot(t)
	_, cl := startActor(t, rt.open(rt.options()))
	if _, err := cl.Register(context.Background(), "../escape.ts", []byte("x")); !errors.Is(err, vfs.ErrSecurity) && !errors.Is(err, vfs.ErrInvalidPath) {
		t.Errorf("Register(../escape.ts): %v, want a vfs path error", err)
	}
}
