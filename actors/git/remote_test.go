package git_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/actors/system"
)

// TestMessagesCrossNodes runs system.CheckRemote over every message of
// git.proto (iterating its file descriptor, so a message added to the
// .proto is checked too), fails on a message this test does not classify,
// and sends each request, encoded and decoded as on the wire, to the actor,
// which must answer with a Written that crosses too.
func TestMessagesCrossNodes(t *testing.T) {
	c, _ := start(t)
	// Each request, and the reply it gets (Announce, WaitFor and Pull reach
	// an actor without a Repo here: a Synced with failure "no_repo").
	requests := map[string]string{"WriteFile": "Written", "PatchFile": "Written", "Announce": "Synced", "WaitFor": "Synced", "Pull": "Synced"}
	others := map[string]bool{"Written": true, "Synced": true, "Failure": true, "Conflict": true, "Committed": true}
	msgs := gitpb.File_actors_git_gitpb_git_proto.Messages()
	for i := 0; i < msgs.Len(); i++ {
		d := msgs.Get(i)
		name := string(d.Name())
		if requests[name] == "" && !others[name] {
			t.Errorf("%s is in git.proto but not classified by this test: add it as a request or a reply/part", d.FullName())
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
		if err != nil {
			t.Fatalf("%s: %v", d.FullName(), err)
		}
		if err := system.CheckRemote(mt.New().Interface()); err != nil {
			t.Error(err)
		}
		if requests[name] == "" {
			continue
		}
		msg := mt.New().Interface()
		if f := d.Fields().ByName("path"); f != nil {
			msg.ProtoReflect().Set(f, protoreflect.ValueOfString("tools/wire.txt"))
		} else if f := d.Fields().ByName("commit"); f != nil {
			msg.ProtoReflect().Set(f, protoreflect.ValueOfString(strings.Repeat("ab", 20)))
		}
		b, err := proto.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		in := mt.New().Interface()
		if err := proto.Unmarshal(b, in); err != nil {
			t.Fatal(err)
		}
		// From another node, without a token: refused, nothing done.
		res, err := c.Root.RequestFuture(c.PID, in, 5*time.Second).Result()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r, ok := res.(proto.Message); !ok || failureCode(r) != system.CodeUnauthenticated {
			t.Errorf("%s without a token from outside the node answered %v, want failure %q", name, res, system.CodeUnauthenticated)
		}
		// As this node's own request (what a client in its process sends).
		res, err = c.Root.RequestFuture(c.PID, &system.Local{Msg: in}, 5*time.Second).Result()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		reply, ok := res.(proto.Message)
		if !ok || string(reply.ProtoReflect().Descriptor().Name()) != requests[name] {
			t.Fatalf("%s answered %T, want *gitpb.%s", name, res, requests[name])
		}
		if err := system.CheckRemote(reply); err != nil {
			t.Error(err)
		}
		if s, ok := reply.(*gitpb.Synced); ok && s.GetFailure().GetCode() != "no_repo" {
			t.Errorf("%s to an actor without a Repo: %v, want failure no_repo", name, s.GetFailure())
		}
	}
}

// failureCode is the code of a reply's failure field ("" for none).
func failureCode(m proto.Message) string {
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("failure")
	if fd == nil || !r.Has(fd) {
		return ""
	}
	f := r.Get(fd).Message()
	return f.Get(f.Descriptor().Fields().ByName("code")).String()
}
