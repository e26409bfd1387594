package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// protoDirs are the directories whose .proto files are generated and
// checked: the actors' messages, capability's revocations (published
// across nodes) and the cluster members' status.
var protoDirs = []string{"actors", "capability", "cluster"}

// walkActors returns the module-relative names of the files under
// protoDirs whose names end with suffix.
func walkActors(t *testing.T, root, suffix string) []string {
	t.Helper()
	var names []string
	for _, dir := range protoDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, suffix) {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				names = append(names, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestGeneratedCodeIsCurrent regenerates every .proto under actors/ and
// compares the result byte for byte with the committed .pb.go beside it; a
// .pb.go without its .proto fails too.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	root := repoRoot(t)
	protos := walkActors(t, root, ".proto")
	if len(protos) == 0 {
		t.Fatal("no .proto file under actors/: the walk is broken")
	}
	out, err := Generate(root, protos)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(protos) {
		t.Fatalf("%d .proto files generated %d files, want one each", len(protos), len(out))
	}
	fresh := t.TempDir()
	generated := map[string]bool{}
	for _, f := range out {
		generated[f.Name] = true
		tmp := filepath.Join(fresh, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tmp, f.Content, 0o644); err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Name)))
		if err != nil {
			t.Errorf("%s: %v: run go generate ./actors/... and commit the generated file", f.Name, err)
			continue
		}
		if !bytes.Equal(committed, f.Content) {
			t.Errorf("%s differs from what its .proto generates (fresh copy: %s): run go generate ./actors/... and commit the result", f.Name, tmp)
		}
	}
	for _, name := range walkActors(t, root, ".pb.go") {
		if !generated[name] {
			t.Errorf("%s has no .proto beside it: delete it, or restore its .proto and run go generate ./actors/...", name)
		}
	}
}

// TestRunWritesBesideTheProto runs the command as go generate does (in the
// .proto's directory, inside a module) with a well-known import, and checks
// the file lands next to the .proto with the types in it.
func TestRunWritesBesideTheProto(t *testing.T) {
	mod := t.TempDir()
	dir := filepath.Join(mod, "actors", "demo", "demopb")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `syntax = "proto3";
package demo.v1;
import "google/protobuf/duration.proto";
option go_package = "example.com/demo/actors/demo/demopb;demopb";
// Ping is sent by the test. Reply: none.
message Ping { google.protobuf.Duration after = 1; }
`
	if err := os.WriteFile(filepath.Join(dir, "demo.proto"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if err := run("", []string{"demo.proto"}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "demo.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"package demopb",
		"// Ping is sent by the test. Reply: none.",
		"type Ping struct",
		`durationpb "google.golang.org/protobuf/types/known/durationpb"`,
		"// source: actors/demo/demopb/demo.proto",
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("demo.pb.go lacks %q", want)
		}
	}
}

// TestRefusals: a file without go_package, a syntax error and no file at all
// are errors that say what to do, and nothing is written.
func TestRefusals(t *testing.T) {
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "nopkg.proto"), []byte("syntax = \"proto3\";\nmessage A {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "bad.proto"), []byte("syntax = \"proto3\";\nmessage A {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(mod, []string{"nopkg.proto"}); err == nil || !strings.Contains(err.Error(), "go_package") {
		t.Errorf("no go_package: err = %v, want one naming go_package", err)
	}
	if _, err := Generate(mod, []string{"bad.proto"}); err == nil || !strings.Contains(err.Error(), "bad.proto") {
		t.Errorf("syntax error: err = %v, want one naming bad.proto", err)
	}
	if err := run(mod, nil); err == nil {
		t.Error("no file named: err = nil")
	}
	if err := run(mod, []string{filepath.Join(os.TempDir(), "elsewhere.proto")}); err == nil || !strings.Contains(err.Error(), "outside the module root") {
		t.Errorf("file outside the root: err = %v", err)
	}
	entries, _ := os.ReadDir(mod)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			t.Errorf("%s written despite the error", e.Name())
		}
	}
}
