package journal

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A module added to a run is in the file once the run's next call is
// recorded, though the run never ended (the metadata is written ahead of
// that call's entry); a second AddModule of it changes nothing, and after
// End AddModule records nothing.
func TestAModuleIsWrittenBeforeTheRunsNextCall(t *testing.T) {
	for _, d := range []Durability{GroupCommit, SyncEach, NoSync} {
		t.Run(d.String(), func(t *testing.T) {
			j, path := openTemp(t, Options{Durability: d})
			run := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/t.ts", Hash: "e1", Pinned: true})
			m := Module{Path: "tools/lib/x.ts", Hash: "aa11"}
			for range 2 {
				if err := run.AddModule(m, []byte("export const x = 1;\n")); err != nil {
					t.Fatal(err)
				}
			}
			h := run.Middleware()(echoDevices().host())
			if _, err := h.Do(context.Background(), call(1, "fs", "read_file", `{"path":"a"}`)); err != nil {
				t.Fatal(err)
			}
			id := run.ID()
			if err := j.Close(); err != nil { // the run never ends
				t.Fatal(err)
			}
			j = openAt(t, path, Options{Durability: d})
			got, err := j.Get(id)
			if err != nil || !got.Pinned || len(got.Modules) != 1 || got.Modules[0] != m || got.Status != StatusRunning {
				t.Fatalf("%+v %v", got, err)
			}
			if src, err := j.Source("aa11"); err != nil || string(src) != "export const x = 1;\n" {
				t.Fatalf("%q %v", src, err)
			}
		})
	}
	j, _ := openTemp(t, Options{})
	run := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/t.ts", Hash: "e1", Pinned: true})
	if err := run.End(StatusOK, json.RawMessage(`1`), nil); err != nil {
		t.Fatal(err)
	}
	if err := run.AddModule(Module{Path: "tools/late.ts", Hash: "bb22"}, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if got, _ := j.Get(run.ID()); len(got.Modules) != 0 || got.Status != StatusOK {
		t.Fatalf("AddModule after End changed the run: %+v", got)
	}
}

// Versions lists a tool's versions newest first, as entry and as module;
// ResolveVersion finds one by a unique prefix and says which exist
// otherwise.
func TestVersionsAndResolveVersion(t *testing.T) {
	j, _ := openTemp(t, Options{})
	for _, v := range []struct{ hash, src string }{{"abcdef0011aa", "one"}, {"abcdef0022bb", "two"}, {"99887766cc", "lib"}} {
		if err := j.PutSource(v.hash, []byte(v.src)); err != nil {
			t.Fatal(err)
		}
	}
	end := func(meta RunMeta) {
		r := mustBegin(t, j, meta)
		if err := r.End(StatusOK, json.RawMessage(`1`), nil); err != nil {
			t.Fatal(err)
		}
	}
	end(RunMeta{Kind: "exec", Tool: "tools/t.ts", Hash: "abcdef0011aa", Pinned: true, Modules: []Module{{Path: "tools/lib/x.ts", Hash: "99887766cc"}}})
	end(RunMeta{Kind: "exec", Tool: "tools/t.ts", Hash: "abcdef0022bb", Pinned: true})
	end(RunMeta{Kind: "exec", Tool: "tools/other.ts", Hash: "ffff", Pinned: true, Modules: []Module{{Path: "tools/t.ts", Hash: "abcdef0011aa"}}})
	vs, err := j.Versions("tools/t.ts")
	if err != nil || len(vs) != 2 {
		t.Fatalf("%+v %v", vs, err)
	}
	if vs[0].Hash != "abcdef0011aa" || vs[0].Runs != 1 || vs[0].Required != 1 || len(vs[0].Modules) != 1 || vs[1].Hash != "abcdef0022bb" {
		t.Fatalf("newest first (the module use is the latest): %+v", vs)
	}
	v, src, err := j.ResolveVersion("tools/t.ts", "ABCDEF0022")
	if err != nil || v.Hash != "abcdef0022bb" || string(src) != "two" {
		t.Fatalf("%+v %q %v", v, src, err)
	}
	if _, _, err := j.ResolveVersion("tools/t.ts", "abcdef00"); !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "tools/t.ts@abcdef0011aa") {
		t.Fatalf("ambiguous: %v", err)
	}
	for _, bad := range []string{"00000000", "abc", "not-hex!"} {
		if _, _, err := j.ResolveVersion("tools/t.ts", bad); !errors.Is(err, ErrNoVersion) || !strings.Contains(err.Error(), "tools/t.ts@abcdef0022bb") {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	if _, _, err := j.ResolveVersion("tools/none.ts", "abcdef0011"); !errors.Is(err, ErrNoVersion) || !strings.Contains(err.Error(), "keeps no version") {
		t.Fatalf("%v", err)
	}
}
