package repo

import (
	"path/filepath"
	"strings"
	"testing"
)

// The git section refuses an unknown strategy and an upstream carrying
// credentials (naming the variable the token goes in), and its options
// take a relative upstream under the tool root.
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Strategy: "merge"}, `git.strategy "merge" is not known: use "direct"`},
		{Config{Upstream: "https://bot:tok@example.com/t.git"}, "git.upstream carries credentials; remove them and put the token in the environment variable AGENTOS_GIT_TOKEN"},
		{Config{Upstream: "https://bot@example.com/t.git", TokenEnv: "GH"}, "environment variable GH"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
	root := t.TempDir()
	o := Config{Upstream: "../tools.git", Strategy: "pr", GitHubRepo: "o/n", TokenEnv: "GH", MaxFileBytes: 9}.Options(root)
	if o.Dir != root || o.Upstream != filepath.Join(root, "..", "tools.git") || o.Strategy != PR || o.MaxFileBytes != 9 || o.TokenEnv != "GH" {
		t.Fatalf("options %+v", o)
	}
	if pr, ok := o.PR.(*GitHubPR); !ok || pr.Repo != "o/n" || pr.TokenEnv != "GH" {
		t.Fatalf("pr adapter %#v", o.PR)
	}
	if o := (Config{Upstream: "https://example.com/t.git"}).Options(root); o.Upstream != "https://example.com/t.git" || o.PR != (NoopPR{}) {
		t.Fatalf("a URL upstream: %+v", o)
	}
}
