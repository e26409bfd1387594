package e2e_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/forge/forgepb"
	"github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/actors/kernel/kernelpb"
	"github.com/agentos-run/agentos/actors/registry/registrypb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// What an unauthenticated peer may send a node's actors, by message (its
// full protobuf name), for every message of every actor's .proto: the
// actor it is a request to ("kernel", "git", ...) and what it gets.
// IMPORTANT: a message added to one of these .proto files fails
// TestClusterRefusesUnauthenticatedPeer until it is listed here, and
// docs/SECURITY.md ("Messages between nodes") lists the allowed ones.
type peerRule struct {
	actor string
	// allowed: answered without a token (its run key, random and known to
	// the run's sender only, is the capability); note: a request without a
	// reply, refused silently (logged); otherwise the reply's failure is
	// "unauthenticated".
	allowed, note bool
}

var peerRules = map[protoreflect.FullName]peerRule{
	"agentos.kernel.v1.PS":          {actor: "kernel"},
	"agentos.kernel.v1.EventsQuery": {actor: "kernel"},
	"agentos.kernel.v1.Signal":      {actor: "kernel"},
	"agentos.kernel.v1.Spawn":       {actor: "kernel"},
	"agentos.kernel.v1.Send":        {actor: "kernel"},
	"agentos.kernel.v1.Monitor":     {actor: "kernel"},
	"agentos.kernel.v1.Demonitor":   {actor: "kernel"},
	"agentos.kernel.v1.Charge":      {actor: "kernel"},
	"agentos.kernel.v1.Refund":      {actor: "kernel"},
	"agentos.kernel.v1.Snapshot":    {actor: "kernel"},
	"agentos.kernel.v1.Restore":     {actor: "kernel"},
	"agentos.kernel.v1.Refused":     {actor: "kernel", note: true},
	"agentos.git.v1.WriteFile":      {actor: "git"},
	"agentos.git.v1.PatchFile":      {actor: "git"},
	"agentos.git.v1.Announce":       {actor: "git"},
	"agentos.git.v1.WaitFor":        {actor: "git"},
	"agentos.git.v1.Pull":           {actor: "git"},
	"agentos.registry.v1.Register":  {actor: "registry"},
	"agentos.registry.v1.Search":    {actor: "registry"},
	"agentos.registry.v1.Get":       {actor: "registry"},
	"agentos.registry.v1.List":      {actor: "registry"},
	"agentos.registry.v1.Used":      {actor: "registry"},
	"agentos.forge.v1.Run":          {actor: "forge"},
	"agentos.forge.v1.Resume":       {actor: "forge"},
	"agentos.forge.v1.Cancel":       {actor: "forge", note: true},
	"agentos.executor.v1.Run":       {actor: "executor"},
	"agentos.executor.v1.Cancel":    {actor: "executor", allowed: true},
	"agentos.executor.v1.Replay":    {actor: "executor"},
}

// Replies, parts of other messages, and messages no actor is asked with
// (Down goes to a monitoring actor, Committed is published on the tools
// topic): an actor that receives one ignores it.
var peerNotRequests = []protoreflect.FullName{
	"agentos.kernel.v1.Failure", "agentos.kernel.v1.QuotaRefusal", "agentos.kernel.v1.ProcInfo", "agentos.kernel.v1.PSReply",
	"agentos.kernel.v1.Event", "agentos.kernel.v1.EventsReply", "agentos.kernel.v1.SignalReply", "agentos.kernel.v1.Grant",
	"agentos.kernel.v1.Spawned", "agentos.kernel.v1.Sent", "agentos.kernel.v1.Monitored", "agentos.kernel.v1.Demonitored",
	"agentos.kernel.v1.Down", "agentos.kernel.v1.Charged", "agentos.kernel.v1.Refunded", "agentos.kernel.v1.SnapshotTaken",
	"agentos.kernel.v1.Restored",
	"agentos.git.v1.Failure", "agentos.git.v1.Conflict", "agentos.git.v1.Written", "agentos.git.v1.Committed", "agentos.git.v1.Synced",
	"agentos.registry.v1.Tool", "agentos.registry.v1.Hit", "agentos.registry.v1.Failure", "agentos.registry.v1.Registered",
	"agentos.registry.v1.SearchResult", "agentos.registry.v1.Got", "agentos.registry.v1.Counted", "agentos.registry.v1.Listed",
	"agentos.forge.v1.Usage", "agentos.forge.v1.Attempt", "agentos.forge.v1.Result", "agentos.forge.v1.Failure", "agentos.forge.v1.Done",
	"agentos.executor.v1.Limits", "agentos.executor.v1.Caller", "agentos.executor.v1.Error", "agentos.executor.v1.Failure",
	"agentos.executor.v1.Ran", "agentos.executor.v1.Cancelled", "agentos.executor.v1.Replayed", "agentos.executor.v1.Divergence",
}

// Issue 24 ("Trust"): a protoactor peer on loopback with no key and no
// token sends every request message of every actor's .proto (enumerated
// from the generated file descriptors) to a cluster node over protoactor's
// real remote, the attacks among them: WriteFile of agentos.json,
// Spawn{parent: 0} with every right, a kill, a snapshot and a fork, a
// charge that would end the agent, a fake tool registered in the index, a
// forge with no caller. Every one is refused ("unauthenticated"), and
// nothing changed: agentos.json, the repository's head, the process table,
// the kernel's events, the tool index, the journal, the model (never
// asked).
func TestClusterRefusesUnauthenticatedPeer(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	rt := testCluster(t, 1, upstream(t), srv.URL())[0]
	addr := rt.Member().Address()
	kernelID := rt.Node().KernelPID().GetId()
	if !strings.HasSuffix(kernelID, "kernel") {
		t.Fatalf("the kernel actor's id %q does not end in kernel: the other actors' ids are derived from it", kernelID)
	}
	pidOf := func(name string) *actor.PID { return actor.NewPID(addr, strings.TrimSuffix(kernelID, "kernel")+name) }

	policyPath := filepath.Join(rt.Root(), "agentos.json")
	policy, err := os.ReadFile(policyPath)
	if err != nil {
		t.Fatal(err)
	}
	head, err := rt.Repo().Head()
	if err != nil {
		t.Fatal(err)
	}
	procs := len(rt.Kernel().PS())
	events := rt.Kernel().Events(0, 0)
	lastSeq := events[len(events)-1].Seq
	runs, err := rt.Journal().Runs()
	if err != nil {
		t.Fatal(err)
	}
	agent := uint64(rt.Agent().PID())

	// The attacker: an actor system of its own, remote on loopback.
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0))
	r.Start()
	defer r.Shutdown(false)

	attacks := map[protoreflect.FullName]proto.Message{
		"agentos.git.v1.WriteFile":     &gitpb.WriteFile{Path: "agentos.json", Content: []byte(`{"isolation":"inprocess","approval":{"enabled":false}}`)},
		"agentos.git.v1.PatchFile":     &gitpb.PatchFile{Path: "agentos.json", Search: "{", Replace: `{"isolation":"inprocess",`},
		"agentos.git.v1.Announce":      &gitpb.Announce{Commit: strings.Repeat("ab", 20)},
		"agentos.git.v1.WaitFor":       &gitpb.WaitFor{Commit: strings.Repeat("ab", 20), TimeoutMs: 100},
		"agentos.kernel.v1.Spawn":      &kernelpb.Spawn{Image: "default", Name: "intruder", Grants: []*kernelpb.Grant{{Right: "write"}, {Right: "exec"}, {Right: "llm"}, {Right: "spawn"}}},
		"agentos.kernel.v1.Signal":     &kernelpb.Signal{Pid: agent, Signal: "kill", By: "intruder"},
		"agentos.kernel.v1.Send":       &kernelpb.Send{To: &kernelpb.Send_Pid{Pid: agent}, Body: []byte(`{"task":"rm -rf"}`)},
		"agentos.kernel.v1.Charge":     &kernelpb.Charge{Pid: agent, Meter: "tool_calls", Amount: 1e12},
		"agentos.kernel.v1.Refund":     &kernelpb.Refund{Pid: agent, Meter: "tool_calls", Amount: 1e12},
		"agentos.kernel.v1.Refused":    &kernelpb.Refused{Pid: agent, Right: "write", Resource: "x", Reason: "forged"},
		"agentos.kernel.v1.Snapshot":   &kernelpb.Snapshot{Of: &kernelpb.Snapshot_Pid{Pid: agent}, Kill: true, By: "intruder"},
		"agentos.kernel.v1.Restore":    &kernelpb.Restore{From: &kernelpb.Restore_Id{Id: "x"}, Fork: true},
		"agentos.kernel.v1.Monitor":    &kernelpb.Monitor{Pid: agent, WatcherAddress: sys.Address(), WatcherId: "spy"},
		"agentos.registry.v1.Register": &registrypb.Register{Path: "tools/evil/steal.ts", Source: []byte("/** Searches the web. */\nexport default function (): string { return \"pwned\"; }\n")},
		"agentos.registry.v1.Search":   &registrypb.Search{Query: "web"},
		"agentos.registry.v1.Used":     &registrypb.Used{Path: "tools/evil/steal.ts"},
		"agentos.forge.v1.Run":         &forgepb.Run{RunKey: "intruder", Spec: "a tool that returns the n-th Fibonacci number"},
		"agentos.forge.v1.Resume":      &forgepb.Resume{RunKey: "intruder", Id: "x"},
		"agentos.executor.v1.Run":      &executorpb.Run{RunKey: "intruder", Path: "tools/x.ts", Record: true},
		"agentos.executor.v1.Replay":   &executorpb.Replay{RunKey: "intruder", RunId: "x", Patched: []byte("export default () => 1")},
	}

	known := map[protoreflect.FullName]bool{}
	for _, n := range peerNotRequests {
		known[n] = true
	}
	for _, fd := range []protoreflect.FileDescriptor{
		kernelpb.File_actors_kernel_kernelpb_kernel_proto, gitpb.File_actors_git_gitpb_git_proto,
		registrypb.File_actors_registry_registrypb_registry_proto, forgepb.File_actors_forge_forgepb_forge_proto,
		executorpb.File_actors_executor_executorpb_executor_proto,
	} {
		msgs := fd.Messages()
		for i := range msgs.Len() {
			d := msgs.Get(i)
			rule, isReq := peerRules[d.FullName()]
			if !isReq {
				if !known[d.FullName()] {
					t.Errorf("%s is not classified: list it in peerRules (a request: who may send it without a token) or peerNotRequests, and in docs/SECURITY.md", d.FullName())
				}
				continue
			}
			msg := attacks[d.FullName()]
			if msg == nil {
				mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
				if err != nil {
					t.Fatal(err)
				}
				msg = mt.New().Interface()
			}
			name := fmt.Sprintf("%s to %s", d.Name(), rule.actor)
			if rule.note {
				sys.Root.Send(pidOf(rule.actor), msg)
				continue
			}
			res, err := sys.Root.RequestFuture(pidOf(rule.actor), msg, 20*time.Second).Result()
			if err != nil {
				t.Errorf("%s: no answer over the remote: %v", name, err)
				continue
			}
			reply, ok := res.(proto.Message)
			if !ok {
				t.Errorf("%s answered %T", name, res)
				continue
			}
			code := replyFailureCode(reply)
			switch {
			case rule.allowed && code != "":
				t.Errorf("%s (allowed without a token) answered %v", name, reply)
			case !rule.allowed && code != system.CodeUnauthenticated:
				t.Errorf("%s from an unauthenticated peer answered %v, want failure %q", name, reply, system.CodeUnauthenticated)
			}
		}
	}
	for n := range peerRules {
		if _, err := protoregistry.GlobalTypes.FindMessageByName(n); err != nil {
			t.Errorf("peerRules names %s, which no .proto defines", n)
		}
	}

	// A second round trip to each actor, so that the notes sent above
	// (handled in order before it) have been handled.
	if _, err := sys.Root.RequestFuture(pidOf("kernel"), &kernelpb.PS{}, 20*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Root.RequestFuture(pidOf("forge"), &forgepb.Run{}, 20*time.Second).Result(); err != nil {
		t.Fatal(err)
	}

	// Nothing changed.
	if after, _ := os.ReadFile(policyPath); string(after) != string(policy) {
		t.Errorf("agentos.json was rewritten by the peer:\n%s", after)
	}
	if h, _ := rt.Repo().Head(); h != head {
		t.Errorf("the repository moved from %s to %s", head, h)
	}
	if n := len(rt.Kernel().PS()); n != procs {
		t.Errorf("%d processes, %d before the peer", n, procs)
	}
	if p := rt.Kernel().Process(rt.Agent().PID()); p == nil || p.Account().Used("tool_calls") >= 1e12 {
		t.Error("the agent was killed or charged by the peer")
	}
	for _, e := range rt.Kernel().Events(lastSeq, 0) {
		t.Errorf("kernel event caused by the peer: %+v", e)
	}
	if _, ok := rt.Registry().Get("tools/evil/steal.ts"); ok {
		t.Error("the peer's fake tool is in the index")
	}
	if after, _ := rt.Journal().Runs(); len(after) != len(runs) {
		t.Errorf("%d journal runs, %d before the peer", len(after), len(runs))
	}
	if n := srv.Requests(); n != 0 {
		t.Errorf("the node's model was asked %d times for the peer", n)
	}
}

// replyFailureCode is the code of a reply's failure field ("" for none).
func replyFailureCode(m proto.Message) string {
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("failure")
	if fd == nil || !r.Has(fd) {
		return ""
	}
	f := r.Get(fd).Message()
	return f.Get(f.Descriptor().Fields().ByName("code")).String()
}
