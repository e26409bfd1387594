package repo_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// fakeGitHub is a loopback GitHub REST API that records pull requests.
type fakeGitHub struct {
	t      *testing.T
	token  string
	status int // answer status; 201 by default
	mu     sync.Mutex
	got    []map[string]string
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	check := func(ok bool, format string, args ...any) bool {
		if !ok {
			f.t.Errorf(format, args...)
			w.WriteHeader(http.StatusBadRequest)
		}
		return ok
	}
	if !check(r.Method == http.MethodPost, "method %s, want POST", r.Method) ||
		!check(r.URL.Path == "/repos/acme/tools/pulls", "path %s", r.URL.Path) ||
		!check(r.Header.Get("Authorization") == "Bearer "+f.token, "Authorization %q", r.Header.Get("Authorization")) ||
		!check(r.Header.Get("Accept") == "application/vnd.github+json", "Accept %q", r.Header.Get("Accept")) ||
		!check(r.Header.Get("X-GitHub-Api-Version") == "2022-11-28", "X-GitHub-Api-Version %q", r.Header.Get("X-GitHub-Api-Version")) {
		return
	}
	var body map[string]string
	raw, _ := io.ReadAll(r.Body)
	if !check(json.Unmarshal(raw, &body) == nil, "body %s is not a JSON object of strings", raw) {
		return
	}
	f.mu.Lock()
	f.got = append(f.got, body)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.status != 0 && f.status != http.StatusCreated {
		w.WriteHeader(f.status)
		io.WriteString(w, `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for acme:`+body["head"]+`."}]}`)
		return
	}
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"number":7,"html_url":"https://github.com/acme/tools/pull/7"}`)
}

// TestGatekeeper: in PR mode the tool goes to a new feat/ branch, a pull
// request is opened through the GitHub API (real loopback HTTP) and main
// is untouched.
func TestGatekeeper(t *testing.T) {
	const token = "ghp_gatekeeper-test-token"
	t.Setenv("AGENTOS_GIT_TOKEN", token)
	gh := &fakeGitHub{t: t, token: token}
	srv := httptest.NewServer(gh)
	defer srv.Close()

	up := newUpstream(t)
	mainBefore := upstreamCommit(t, up, "main").Hash
	dir := t.TempDir()
	clock := func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }
	r := hydrate(t, dir, up, func(o *repo.Options) {
		o.Strategy = repo.PR
		o.PR = repo.GitHubPR{API: srv.URL, Repo: "acme/tools"}
		o.Now = clock
	})
	writeFile(t, dir, "tools/math/add.ts", "export default ({a, b}: {a: number, b: number}) => a + b")
	p, err := r.Persist(ctx, []string{"tools/math/add.ts"}, "write tools/math/add.ts")
	must(t, err)
	if p.Branch != "feat/math-add-20260304T050607" || p.PRURL != "https://github.com/acme/tools/pull/7" || p.Attempts != 1 {
		t.Fatalf("Persisted = %+v", p)
	}
	if len(gh.got) != 1 {
		t.Fatalf("%d pull requests, want 1", len(gh.got))
	}
	pr := gh.got[0]
	if pr["title"] != "agentos: write tools/math/add.ts" || pr["head"] != p.Branch || pr["base"] != "main" || !strings.Contains(pr["body"], "tools/math/add.ts") {
		t.Fatalf("pull request = %v", pr)
	}
	if got := upstreamFiles(t, up, p.Branch)["tools/math/add.ts"]; !strings.HasPrefix(got, "export default") {
		t.Fatalf("feature branch content = %q", got)
	}
	if c := upstreamCommit(t, up, p.Branch); c.Hash.String() != p.Commit || c.NumParents() != 1 || c.ParentHashes[0] != mainBefore {
		t.Fatalf("feature commit %s is not made on main", c.Hash)
	}
	if h := upstreamCommit(t, up, "main").Hash; h != mainBefore {
		t.Fatal("PR mode wrote main")
	}
	if readFile(t, dir, "tools/math/add.ts") == "" {
		t.Fatal("the working tree lost the proposed tool")
	}

	// A second proposal in the same second gets its own branch; GitHub
	// refusing it is an error quoting GitHub, without the token.
	gh.status = http.StatusUnprocessableEntity
	writeFile(t, dir, "tools/math/add.ts", "export default () => 0")
	p2, err := r.Persist(ctx, []string{"tools/math/add.ts"}, "rewrite tools/math/add.ts")
	if !errors.Is(err, repo.ErrPullRequest) || !strings.Contains(err.Error(), "A pull request already exists") {
		t.Fatalf("err = %v, want ErrPullRequest quoting GitHub", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Fatal("error leaks the token")
	}
	if p2.Branch != "feat/math-add-20260304T050607-2" {
		t.Fatalf("second branch = %q", p2.Branch)
	}
	if got := upstreamBranches(t, up); len(got) != 3 {
		t.Fatalf("branches = %v", got)
	}
	if h := upstreamCommit(t, up, "main").Hash; h != mainBefore {
		t.Fatal("PR mode wrote main")
	}
}

// TestGitHubPRNeedsToken: no token, no request.
func TestGitHubPRNeedsToken(t *testing.T) {
	t.Setenv("AGENTOS_PR_TOKEN_UNSET", "")
	_, err := repo.GitHubPR{API: "http://127.0.0.1:1", Repo: "a/b", TokenEnv: "AGENTOS_PR_TOKEN_UNSET"}.Open(ctx, repo.PullRequest{Title: "t", Head: "h", Base: "main"})
	if !errors.Is(err, repo.ErrPullRequest) || !strings.Contains(err.Error(), "AGENTOS_PR_TOKEN_UNSET") {
		t.Fatalf("err = %v", err)
	}
}

// TestTokenNeverLeaks: an HTTPS-style upstream on loopback that fails and
// echoes the credentials it got: the token reaches the server as basic auth
// (user x-access-token) but never appears in an error or a log line.
func TestTokenNeverLeaks(t *testing.T) {
	const token = "s3cr3t-agentos-token-4242"
	t.Setenv("AGENTOS_GIT_TOKEN", token)
	var mu sync.Mutex
	var users, passwords []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		mu.Lock()
		users, passwords = append(users, u), append(passwords, p)
		mu.Unlock()
		http.Error(w, "upstream exploded for "+u+":"+p+" at "+r.URL.String(), http.StatusInternalServerError)
	}))
	defer srv.Close()

	var logs syncBuffer
	_, err := repo.Hydrate(ctx, repo.Options{Dir: t.TempDir(), Upstream: srv.URL + "/acme/tools.git", Logger: newLogger(&logs)})
	if !errors.Is(err, repo.ErrUpstream) {
		t.Fatalf("Hydrate = %v, want ErrUpstream", err)
	}
	t.Logf("error: %v", err)
	if strings.Contains(err.Error(), token) || strings.Contains(logs.String(), token) {
		t.Fatalf("the token leaked:\nerror: %v\nlogs: %s", err, logs.String())
	}
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), token) {
			t.Fatalf("a wrapped error leaks the token: %v", e)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(users) == 0 || users[0] != "x-access-token" || passwords[0] != token {
		t.Fatalf("server got basic auth %v / %d passwords, want x-access-token and the token", users, len(passwords))
	}
}
