package forgerun_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentos-run/agentos/actors/forge/forgerun"
	"github.com/agentos-run/agentos/journal"
)

// TestEncodeKeepsTheRecord: Encode writes the bytes the forge has always
// journaled (keys sorted, request and lessons only when set), so a journal
// shared with older nodes reads the same.
func TestEncodeKeepsTheRecord(t *testing.T) {
	for _, c := range []struct {
		args forgerun.Args
		want string
	}{
		{forgerun.Args{Spec: "fib"}, `{"spec":"fib"}`},
		{forgerun.Args{Spec: "fib", Request: "r1"}, `{"request":"r1","spec":"fib"}`},
		{forgerun.Args{Spec: "fib", Lessons: true, LessonAgents: []string{"a", "b"}}, `{"lesson_agents":["a","b"],"lessons":"1","spec":"fib"}`},
		{forgerun.Args{Spec: "fib", LessonAgents: []string{"a"}}, `{"spec":"fib"}`},
	} {
		if got := string(c.args.Encode()); got != c.want {
			t.Errorf("Encode(%+v) = %s, want %s", c.args, got, c.want)
		}
	}
}

// TestArgsOf: a record reads back as it was written, records of older
// versions (no request, lessons without their agents) read as they meant,
// and a run of another kind or with foreign arguments is not a forge's.
func TestArgsOf(t *testing.T) {
	in := forgerun.Args{Spec: "a tool that adds", Request: "k", Lessons: true, LessonAgents: []string{"default"}}
	got, ok := forgerun.ArgsOf(journal.RunMeta{Kind: forgerun.Kind, Args: in.Encode()})
	if !ok || !reflect.DeepEqual(got, in) {
		t.Fatalf("ArgsOf(Encode(%+v)) = %+v, %v", in, got, ok)
	}
	old := journal.RunMeta{Kind: forgerun.Kind, Args: json.RawMessage(`{"spec":"s","lessons":"1"}`)}
	if a, ok := forgerun.ArgsOf(old); !ok || !a.Lessons || a.LessonAgents != nil || a.Request != "" {
		t.Fatalf("a record of before lesson_agents: %+v, %v", a, ok)
	}
	if s, ok := forgerun.SpecOf(old); !ok || s != "s" {
		t.Fatalf("SpecOf: %q, %v", s, ok)
	}
	if r := forgerun.RequestOf(journal.RunMeta{Kind: forgerun.Kind, Args: in.Encode()}); r != "k" {
		t.Fatalf("RequestOf: %q", r)
	}
	for _, m := range []journal.RunMeta{
		{Kind: "exec", Args: in.Encode()},
		{Kind: forgerun.Kind, Args: json.RawMessage(`["not", "an", "object"]`)},
		{Kind: forgerun.Kind, Args: json.RawMessage(`{"request":"k"}`)},
		{Kind: forgerun.Kind},
	} {
		if s, ok := forgerun.SpecOf(m); ok || s != "" {
			t.Errorf("SpecOf(%s %s) = %q, true: not a forge run with a spec", m.Kind, m.Args, s)
		}
	}
	if r := forgerun.RequestOf(journal.RunMeta{Kind: "exec", Args: in.Encode()}); r != "" {
		t.Errorf("RequestOf of an exec run: %q", r)
	}
}
