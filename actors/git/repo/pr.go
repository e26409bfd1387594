package repo

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// PRAdapter opens a pull request on a Git hosting platform (gatekeeper
// mode, Strategy PR). Open is called after the branch pr.Head was pushed;
// it returns the pull request's URL.
type PRAdapter interface {
	Open(ctx context.Context, pr PullRequest) (url string, err error)
}

// PullRequest is what PRAdapter.Open proposes: merge Head into Base.
type PullRequest struct {
	Title string
	Head  string
	Base  string
	Body  string
}

// NoopPR opens nothing: the pushed branch is the proposal. Open returns
// "", nil.
type NoopPR struct{}

// Open implements PRAdapter.
func (NoopPR) Open(context.Context, PullRequest) (string, error) { return "", nil }

// GitHubPR opens pull requests through the GitHub REST API:
// POST {API}/repos/{Repo}/pulls.
type GitHubPR struct {
	// API is the API root; default "https://api.github.com".
	API string
	// Repo is "owner/name" (REQUIRED).
	Repo string
	// TokenEnv names the environment variable holding the token; default
	// DefaultTokenEnv. The token is sent as "Authorization: Bearer" and
	// never logged or put in an error.
	TokenEnv string
	// Client is the HTTP client; default one with a 30 s timeout.
	Client *http.Client
}

var defaultPRClient = &http.Client{Timeout: 30 * time.Second}

// Open implements PRAdapter. A non-2xx answer is an error wrapping
// ErrPullRequest that quotes GitHub's message.
func (g GitHubPR) Open(ctx context.Context, pr PullRequest) (string, error) {
	api := cmp.Or(strings.TrimRight(g.API, "/"), "https://api.github.com")
	if g.Repo == "" || strings.Count(g.Repo, "/") != 1 {
		return "", fmt.Errorf("%w: GitHubPR.Repo %q must be owner/name", ErrPullRequest, g.Repo)
	}
	env := cmp.Or(g.TokenEnv, DefaultTokenEnv)
	token := os.Getenv(env)
	if token == "" {
		return "", fmt.Errorf("%w: the environment variable %s is empty: export a GitHub token allowed to open pull requests on %s", ErrPullRequest, env, g.Repo)
	}
	body, err := json.Marshal(map[string]string{"title": pr.Title, "head": pr.Head, "base": pr.Base, "body": pr.Body})
	if err != nil {
		return "", err
	}
	url := api + "/repos/" + g.Repo + "/pulls"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrPullRequest, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("Content-Type", "application/json")
	resp, err := cmp.Or(g.Client, defaultPRClient).Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: POST %s: %s", ErrPullRequest, url, redact(err.Error(), token))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out prAnswer
	_ = json.Unmarshal(raw, &out)
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("%w: GitHub answered %s to POST %s (head %s, base %s): %q",
			ErrPullRequest, resp.Status, url, pr.Head, pr.Base, redact(out.reason(raw), token))
	}
	if out.HTMLURL == "" {
		return "", fmt.Errorf("%w: GitHub answered %s without html_url", ErrPullRequest, resp.Status)
	}
	return out.HTMLURL, nil
}

// prAnswer is GitHub's answer to opening a pull request.
type prAnswer struct {
	HTMLURL string `json:"html_url"`
	Message string `json:"message"`
	Errors  []struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"errors"`
}

// reason is what a refusal says: its message and those of its errors (or
// their codes), else the start of the raw answer.
func (a prAnswer) reason(raw []byte) string {
	msg := a.Message
	for _, e := range a.Errors {
		if e.Message != "" {
			msg += "; " + e.Message
		} else if e.Code != "" {
			msg += "; " + e.Code
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
		if len(msg) > 200 {
			msg = msg[:200]
		}
	}
	return msg
}

// redact removes a secret from a text.
func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
