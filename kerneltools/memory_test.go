package kerneltools_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/memory"
)

// The memory tools: a named process's memory is kept under its name; an
// unnamed process's is its own, dropped when it ends; forget deletes only
// the caller's items; pages are not the model's to write; every call is
// charged; a node without a store says so.
func TestMemoryTools(t *testing.T) {
	store := memory.Open(filepath.Join(t.TempDir(), "memory.db"), memory.Options{})
	defer store.Close()
	n := boot(t, executor.IsolationInProcess, kernel.Options{}, func(o *host.NodeOptions) { o.Memory = store })
	alice := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Name: "alice", Quota: capability.Limits{capability.ToolCalls: 100}})
	anon := spawn(t, n.Kernel(), block, kernel.SpawnOptions{})

	out, err := call(t, n, alice, "remember", `{"text":"Deploys happen on Tuesdays.","tags":["ops"]}`)
	var r kerneltools.RememberResult
	if err != nil || json.Unmarshal(out, &r) != nil || r.ID == "" || r.Kind != memory.Fact || r.Duplicate {
		t.Fatalf("remember: %s %v", out, err)
	}
	if out, _ := call(t, n, alice, "remember", `{"text":"deploys happen on tuesdays."}`); !strings.Contains(string(out), `"duplicate":true`) {
		t.Fatalf("the same text again: %s", out)
	}
	if _, err := call(t, n, alice, "remember", `{"text":"x y z","kind":"page"}`); !errors.Is(err, kerneltool.ErrInvalidArgs) {
		t.Fatalf("a page from the model: %v", err)
	}
	out, err = call(t, n, alice, "recall", `{"query":"when are deploys","kind":"fact"}`)
	var hits []memory.Hit
	if err != nil || json.Unmarshal(out, &hits) != nil || len(hits) != 1 || hits[0].Agent != "alice" || hits[0].Tags[0] != "ops" {
		t.Fatalf("recall: %s %v", out, err)
	}
	if out, err := call(t, n, alice, "remember", `{"text":"The staging host is stg-1."}`); err != nil || !strings.Contains(string(out), `"id":"2"`) {
		t.Fatalf("a second item: %s %v", out, err)
	}
	// The unnamed process: its own memory, not alice's, gone when it ends.
	if _, err := call(t, n, anon, "remember", `{"text":"scratch note about deploys"}`); err != nil {
		t.Fatal(err)
	}
	eph := kerneltools.MemoryName(anon)
	if got, _ := store.Recall(eph, "deploys", memory.RecallOptions{}); len(got) != 1 {
		t.Fatalf("the unnamed process's memory: %+v", got)
	}
	if _, err := call(t, n, anon, "forget", `{"id":"2"}`); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("forgetting another's item: %v", err)
	}
	if _, err := call(t, n, anon, "recall", `{"query":"deploys","agent":"`+eph+`"}`); err != nil {
		t.Fatalf("its own memory by its own name: %v", err)
	}
	if _, err := call(t, n, alice, "recall", `{"query":"deploys","agent":"`+eph+`"}`); !errors.Is(err, kerneltool.ErrInvalidArgs) {
		t.Fatalf("an ephemeral memory read by another: %v", err)
	}
	n.Kernel().Kill(anon.PID(), "test")
	wait(t, anon)
	dropped := false
	for range 200 {
		if got, _ := store.List(eph, ""); len(got) == 0 {
			dropped = true
			break
		}
		sleep()
	}
	if !dropped {
		t.Fatal("the ended process's memory was not dropped")
	}
	if _, err := call(t, n, alice, "forget", `{"id":"`+r.ID+`"}`); err != nil {
		t.Fatal(err)
	}
	if out, _ := call(t, n, alice, "recall", `{"query":"deploys"}`); string(out) != "[]" {
		t.Fatalf("after forget: %s", out)
	}
	if used := alice.Account().Used(capability.ToolCalls); used != 8 {
		t.Fatalf("alice was charged %v tool calls, want 8 (refused ones too)", used)
	}

	bare := boot(t, executor.IsolationInProcess, kernel.Options{})
	p := spawn(t, bare.Kernel(), block, kernel.SpawnOptions{Name: "p"})
	if _, err := call(t, bare, p, "recall", `{"query":"x"}`); err == nil || !strings.Contains(err.Error(), "no memory store is configured") {
		t.Fatalf("without a store: %v", err)
	}
}

func sleep() { time.Sleep(10 * time.Millisecond) }
