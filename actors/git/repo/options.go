package repo

import (
	"cmp"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Strategy says how Persist publishes a commit.
type Strategy string

const (
	// Direct commits on Options.Branch and pushes it (the default).
	Direct Strategy = "direct"
	// PR (gatekeeper mode) commits on a new branch
	// "feat/<tool>-<yyyymmddThhmmss>" made from upstream's branch, pushes
	// that branch and opens a pull request through Options.PR; the main
	// branch is never written.
	PR Strategy = "pr"
)

// DefaultTokenEnv is the environment variable that holds the HTTPS token
// when Options.TokenEnv (or GitHubPR.TokenEnv) is empty.
const DefaultTokenEnv = "AGENTOS_GIT_TOKEN"

// Options configure Hydrate. The zero value of every field but Dir and
// Upstream means a sensible default.
type Options struct {
	// Dir is the tool root = the Git working tree (REQUIRED). It is created
	// when missing; files already in it are kept (see Hydrate).
	Dir string
	// Upstream is a local path or file:// URL of a (bare) repository, or an
	// https:// URL (REQUIRED). http:// is accepted for loopback hosts only
	// (tests, a local Git server). IMPORTANT: the URL MUST NOT carry
	// credentials; the token comes from TokenEnv.
	Upstream string
	// Branch is the upstream branch; default "main".
	Branch string
	// AuthorName and AuthorEmail sign every commit; default "agentos" and
	// "agentos@localhost".
	AuthorName  string
	AuthorEmail string
	// TokenEnv names the environment variable holding the HTTPS token;
	// default DefaultTokenEnv. The token is read from the environment at
	// every fetch and push, sent as HTTP basic auth (user
	// "x-access-token"), and never logged, put in an error or committed.
	TokenEnv string
	// Strategy is Direct (default) or PR.
	Strategy Strategy
	// PR opens pull requests in PR mode; nil means NoopPR.
	PR PRAdapter
	// Retries bounds the push attempts of one Persist when the upstream
	// rejects the push because another writer moved the branch; default 8.
	Retries int
	// Derived are files generated from the others (e.g. "meta.json"). They
	// are always committed with a Persist, never merged by hand and never
	// a conflict: after the tree was updated from upstream they are
	// rebuilt by Regenerate.
	Derived []string
	// Regenerate rewrites the Derived files in the working tree from the
	// current tree. It is called after Hydrate updated the tree, and before
	// re-committing after a rejected push. It runs with the Repo's lock
	// held: it MUST NOT call the Repo. nil means derived files keep the
	// content this writer gave them (last writer wins).
	Regenerate func() error
	// Derive, when set, brings the Derived files up to date in the working
	// tree before a Persist commits them (e.g. the registry's Flush, which
	// writes its shards from its log), and returns the Derived files that
	// changed (written or removed) since its previous call, Regenerate's
	// writes included: a commit reads only those, so that its cost does
	// not grow with the number of Derived files or their size.
	// IMPORTANT: it MUST report every Derived file it or Regenerate
	// changed, or that change is not committed. It runs with the Repo's
	// lock held: it MUST NOT call the Repo. nil: every Derived file is
	// read at every commit, as the working tree holds it.
	Derive func() (changed []string, err error)
	// CheckedOut, when set, is told of each file the first checkout of a
	// fresh tool root writes (p slash-separated, relative to Dir), with the
	// exact content written and the file's stat read right after writing
	// it: what the registry needs not to read the files again
	// (registry.Seed). Later updates do not call it. It runs with the
	// Repo's lock held: it MUST NOT call the Repo, and MUST NOT keep
	// content past the call.
	CheckedOut func(p string, content []byte, fi fs.FileInfo)
	// Walked, when set, is given once, just before the first Regenerate
	// of a tool root checked out before (a later start), what the scan of
	// the working tree lstat'ed: every regular file and symbolic link it
	// met, by path (slash-separated, relative to Dir), kept up to date
	// with the files the update then wrote or removed; and the paths it
	// skipped as ignored (Ignore, temporary files; a directory with a
	// final slash). It is what the
	// registry lists its tools from instead of walking the tree again
	// (registry.Seed.Listed). The maps are the callee's. It runs with the
	// Repo's lock held: it MUST NOT call the Repo. IMPORTANT: it is the
	// tree as the scan and the update saw it: a file another process
	// writes in between is not in it.
	Walked func(files map[string]fs.FileInfo, skipped []string)
	// Hold, when set, says why a working file must not be committed yet
	// (e.g. a tool that does not compile): Hydrate's recovery of files a
	// killed writer left unsaved skips it (it stays in the working tree,
	// reported at Warn). nil: every such file is recovered. It runs with
	// the Repo's lock held: it MUST NOT call the Repo.
	Hold func(path string, content []byte) error
	// Ignore lists paths that are never committed (nor written from the
	// upstream): "dir/" ignores a directory, anything else one file.
	// Default [".agentos/"]. IMPORTANT: ".git/", ".agentos/" (journal,
	// sockets) and "agentos.json" (the node's configuration), in any case,
	// are ignored whatever Ignore says, and so are temporary files
	// ("agentos-tmp-*", "*.agentos-tmp").
	Ignore []string
	// MaxFileBytes refuses, at checkout, a file of the upstream's tree
	// larger than this (see checkout.go). Default DefaultMaxFileBytes.
	MaxFileBytes int64
	// FullHistory makes the first checkout of a tool root fetch the
	// upstream's whole history. Default (false): the first fetch is of
	// depth 1 (the head commit and its tree, when the upstream supports
	// shallow fetches), so that a first boot costs the size of the tree,
	// not of the history; the history is fetched later only if something
	// needs it (see shallow.go).
	FullHistory bool
	// Now is the clock of commit times and branch names; default time.Now.
	Now func() time.Time
	// Logger receives progress (Info) and anomalies (Warn); default: no
	// logging.
	Logger *slog.Logger
}

// normalize applies the defaults and validates o.
func (o Options) normalize() (Options, error) {
	if o.Dir == "" {
		return o, fmt.Errorf("%w: Dir (the tool root) is required", ErrOptions)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return o, fmt.Errorf("%w: Dir %q: %v", ErrOptions, o.Dir, err)
	}
	o.Dir = dir
	if o.Upstream == "" {
		return o, fmt.Errorf("%w: Upstream (the repository tools are kept in) is required: a path of a bare repository (see InitBare) or an https:// URL", ErrOptions)
	}
	up, err := normalizeUpstream(o.Upstream)
	if err != nil {
		return o, err
	}
	o.Upstream = up
	o.applyDefaults()
	if err := plumbing.NewBranchReferenceName(o.Branch).Validate(); err != nil || strings.HasPrefix(o.Branch, "-") {
		return o, fmt.Errorf("%w: Branch %q is not a valid branch name", ErrOptions, o.Branch)
	}
	if o.Strategy != Direct && o.Strategy != PR {
		return o, fmt.Errorf("%w: Strategy %q: use %q or %q", ErrOptions, o.Strategy, Direct, PR)
	}
	o.Derived = slices.Clone(o.Derived)
	o.Ignore = slices.Clone(o.Ignore)
	for i, p := range o.Derived {
		c, err := cleanRel(p)
		if err != nil {
			return o, fmt.Errorf("%w: Derived %q: %v", ErrOptions, p, err)
		}
		o.Derived[i] = c
	}
	return o, nil
}

// applyDefaults gives the options left zero (or negative, for the limits)
// their default.
func (o *Options) applyDefaults() {
	o.MaxFileBytes = cmp.Or(max(o.MaxFileBytes, 0), DefaultMaxFileBytes)
	o.Branch = cmp.Or(o.Branch, "main")
	o.AuthorName = cmp.Or(o.AuthorName, "agentos")
	o.AuthorEmail = cmp.Or(o.AuthorEmail, "agentos@localhost")
	o.TokenEnv = cmp.Or(o.TokenEnv, DefaultTokenEnv)
	o.Strategy = cmp.Or(o.Strategy, Direct)
	o.Retries = cmp.Or(max(o.Retries, 0), 8)
	if o.PR == nil {
		o.PR = NoopPR{}
	}
	if o.Ignore == nil {
		o.Ignore = []string{".agentos/"}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
}

// normalizeUpstream returns the URL handed to go-git: an absolute path for
// local repositories, the URL otherwise.
func normalizeUpstream(s string) (string, error) {
	if !strings.Contains(s, "://") {
		abs, err := filepath.Abs(s)
		if err != nil {
			return "", fmt.Errorf("%w: Upstream path: %v", ErrOptions, err)
		}
		return abs, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Parse errors quote the URL, which may hold credentials.
		return "", fmt.Errorf("%w: Upstream is not a valid URL", ErrOptions)
	}
	if u.User != nil {
		return "", fmt.Errorf("%w: Upstream %s://%s%s carries credentials: remove them from the URL and export the token in the environment variable named by TokenEnv (default %s)",
			ErrOptions, u.Scheme, u.Host, u.Path, DefaultTokenEnv)
	}
	switch u.Scheme {
	case "file":
		if u.Path == "" {
			return "", fmt.Errorf("%w: Upstream %q has no path", ErrOptions, s)
		}
		return filepath.Clean(u.Path), nil
	case "https":
		return s, nil
	case "http":
		if !isLoopback(u.Hostname()) {
			return "", fmt.Errorf("%w: Upstream %s uses plain http to a non-loopback host: use https", ErrOptions, s)
		}
		return s, nil
	default:
		return "", fmt.Errorf("%w: Upstream scheme %q is not supported: use a local path, file:// or https://", ErrOptions, u.Scheme)
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isRemote says whether the upstream is reached over HTTP(S).
func isRemote(upstream string) bool {
	return strings.HasPrefix(upstream, "https://") || strings.HasPrefix(upstream, "http://")
}
