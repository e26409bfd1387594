package scaffold

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

func TestInitCreatesABareUpstreamBesideTheRootAndNamesIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	created, err := Init(dir, Options{InitBare: repo.InitBare})
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	if want := []string{"tools/", abs + ".git (bare Git upstream)", ConfigFile, RegistryFile, ".gitignore"}; !reflect.DeepEqual(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	if fi, err := os.Stat(filepath.Join(abs+".git", "HEAD")); err != nil || fi.IsDir() {
		t.Fatalf("no bare repository beside the root: %v", err)
	}
	var cfg struct {
		Git struct {
			Upstream, Branch, Strategy string
		} `json:"git"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.Git.Upstream != filepath.Join("..", "root.git") || cfg.Git.Branch != "main" || cfg.Git.Strategy != "direct" {
		t.Fatalf("agentos.json does not name the upstream (%v):\n%s", err, b)
	}
	if g, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(g) != StateDir+"/\n" {
		t.Fatalf(".gitignore %q", g)
	}
}

func TestInitNeverOverwritesAndUsesTheGivenToolsDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"tools_dir": "lib"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	created, err := Init(dir, Options{ToolsDir: "lib", InitBare: repo.InitBare})
	if err != nil {
		t.Fatal(err)
	}
	// An existing agentos.json: no upstream is created, the file is kept.
	if want := []string{"lib/", RegistryFile, ".gitignore"}; !reflect.DeepEqual(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ConfigFile)); string(b) != `{"tools_dir": "lib"}` {
		t.Fatalf("agentos.json overwritten: %s", b)
	}
	if again, err := Init(dir, Options{ToolsDir: "lib", InitBare: repo.InitBare}); err != nil || len(again) != 0 {
		t.Fatalf("second Init created %v, %v", again, err)
	}
}

func TestInitWithAnUpstreamCreatesNoRepository(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	created, err := Init(dir, Options{Upstream: "https://example.com/tools.git", InitBare: repo.InitBare})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tools/", ConfigFile, RegistryFile, ".gitignore"}; !reflect.DeepEqual(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	if _, err := os.Stat(dir + ".git"); !os.IsNotExist(err) {
		t.Fatalf("a bare repository was created beside the root: %v", err)
	}
}

// TestInitWithGitNeedsInitBare: Git without the function that makes a bare
// repository (the composition root's to pass: scaffold imports no actor
// package) is refused before anything is made, saying what to pass; without
// Git none is needed.
func TestInitWithGitNeedsInitBare(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	created, err := Init(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "Options.InitBare") {
		t.Fatalf("Init without InitBare: created %v, err %v; want a refusal naming Options.InitBare", created, err)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) || len(created) != 0 {
		t.Fatalf("a refused Init made %v (%v)", created, serr)
	}
	if _, err := Init(dir, Options{NoGit: true}); err != nil {
		t.Fatalf("Init without Git: %v", err)
	}
}
