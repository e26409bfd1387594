package repo

import (
	"cmp"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Config is the "git" section of agentos.json: where the tool root's tools
// are persisted and shared. The zero value: not persisted (tools are
// written to the working tree only).
type Config struct {
	// Upstream is a bare repository: a path (relative to the tool root or
	// absolute), a file:// URL or an https:// URL. Empty: tools are written
	// to the working tree only.
	Upstream string `json:"upstream,omitempty"`
	// Branch is the shared branch. Default "main".
	Branch string `json:"branch,omitempty"`
	// Strategy is "direct" (default: commit and push to Branch) or "pr"
	// (gatekeeper: push a feat/<tool>-<time> branch and open a review).
	Strategy string `json:"strategy,omitempty"`
	// AuthorName and AuthorEmail sign the commits. Default agentos,
	// agentos@localhost.
	AuthorName  string `json:"author_name,omitempty"`
	AuthorEmail string `json:"author_email,omitempty"`
	// TokenEnv names the environment variable holding the HTTPS token.
	// Default AGENTOS_GIT_TOKEN (DefaultTokenEnv). IMPORTANT: the token
	// itself never goes in this file.
	TokenEnv string `json:"token_env,omitempty"`
	// GitHubRepo ("owner/name") makes the pr strategy open pull requests
	// through the GitHub REST API (GitHubAPI, default
	// https://api.github.com). Empty: the branch is pushed, no review opened.
	GitHubRepo string `json:"github_repo,omitempty"`
	GitHubAPI  string `json:"github_api,omitempty"`
	// MaxFileBytes refuses, at checkout, a file of the upstream's tree
	// larger than this (logged, listed by Repo.Refused); the rest of the
	// update goes on. Default DefaultMaxFileBytes (32 MiB).
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
}

// Validate checks the section, naming the key that is wrong.
func (c Config) Validate() error {
	switch Strategy(c.Strategy) {
	case "", Direct, PR:
	default:
		return fmt.Errorf("git.strategy %q is not known: use %q (commit and push to the branch) or %q (push a branch and open a review)", c.Strategy, Direct, PR)
	}
	if u, err := url.Parse(c.Upstream); err == nil && u.User != nil {
		return fmt.Errorf("git.upstream carries credentials; remove them and put the token in the environment variable %s", c.Token())
	}
	return nil
}

// Token returns the name of the environment variable holding the HTTPS
// token (git.token_env, default DefaultTokenEnv).
func (c Config) Token() string { return cmp.Or(c.TokenEnv, DefaultTokenEnv) }

// Options returns the options the section stands for, for the tool root
// at root: a relative upstream path is taken under root, and a GitHubRepo
// opens pull requests through GitHubPR. The caller adds what the file does
// not say (Derived, Regenerate, Hold, Ignore, Logger).
func (c Config) Options(root string) Options {
	up := c.Upstream
	if !strings.Contains(up, "://") && !filepath.IsAbs(up) {
		up = filepath.Join(root, filepath.FromSlash(up))
	}
	var pr PRAdapter = NoopPR{}
	if c.GitHubRepo != "" {
		pr = &GitHubPR{API: c.GitHubAPI, Repo: c.GitHubRepo, TokenEnv: c.TokenEnv}
	}
	return Options{
		Dir: root, Upstream: up, Branch: c.Branch,
		AuthorName: c.AuthorName, AuthorEmail: c.AuthorEmail, TokenEnv: c.TokenEnv,
		Strategy: Strategy(c.Strategy), PR: pr, MaxFileBytes: c.MaxFileBytes,
	}
}
