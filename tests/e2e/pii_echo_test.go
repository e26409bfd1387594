package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
)

const lookupTool = `/** Looks a contact up at a URL: the name in the path, e-mail and name in the query and the body; returns the status and the answer. */
export default async function (a: { url: string; email: string; name: string }): Promise<string> {
  const r = await tgp.fetch(a.url + "/" + encodeURIComponent(a.name) + "?email=" + encodeURIComponent(a.email) + "&name=" + a.name, { method: "POST", body: JSON.stringify({ email: a.email, name: a.name }) });
  return r.status + " " + r.body;
}
`

// echoLeaks reports whether s holds v in a form a reader can decode: any
// letter case, after up to three rounds of URL decoding, Go/JSON
// unquoting and HTML unescaping.
func echoLeaks(s, v string) bool {
	cands := []string{s}
	for range 3 {
		for _, c := range cands {
			if u, err := url.QueryUnescape(c); err == nil {
				cands = append(cands, u)
			}
			if u, err := url.PathUnescape(c); err == nil {
				cands = append(cands, u)
			}
			if u, err := strconv.Unquote(`"` + c + `"`); err == nil {
				cands = append(cands, u)
			}
			cands = append(cands, html.UnescapeString(c))
		}
	}
	lv := strings.ToLower(v)
	for _, c := range cands {
		if strings.Contains(strings.ToLower(c), lv) {
			return true
		}
	}
	for _, form := range []string{url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(url.QueryEscape(v), "+", "%20")} {
		if strings.Contains(strings.ToLower(s), strings.ToLower(form)) {
			return true
		}
	}
	return false
}

// Review 14 item 1: a value restored into a fetch of a restore_to target
// came back percent-encoded in the fetch's error (refused, timeout, too
// big) or in an echoing reply, and reached the journal, the tool and the
// model. An agent drives the lookups through a real HTTP server and a
// closed loopback port; no real value may appear, in any encoding, in
// what the model receives, in the tools' results and errors, or in the
// journal file's bytes, while the target receives the real values.
func TestPIIRestoredValueNeverEchoes(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close() // nothing listens there: connections are refused
	received := make(chan string, 32)
	release := make(chan struct{})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- r.URL.EscapedPath() + "?" + r.URL.RawQuery + " " + string(body)
		switch {
		case strings.HasPrefix(r.URL.Path, "/crm/echo/"):
			w.Header().Set("X-Query", r.URL.RawQuery)
			_, _ = fmt.Fprintf(w, "path=%s query=%s body=%s json=%q", r.URL.EscapedPath(), r.URL.RawQuery, body, body)
		case strings.HasPrefix(r.URL.Path, "/crm/big/"):
			_, _ = io.WriteString(w, strings.Repeat("x", 4096))
		case strings.HasPrefix(r.URL.Path, "/crm/slow/"):
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer web.Close()
	defer close(release)

	targets := []string{closed + "/crm/find", web.URL + "/crm/slow", web.URL + "/crm/big", web.URL + "/crm/echo"}
	cfg := host.Config{
		Root: root, Isolation: "inprocess",
		Fetch: host.FetchConfig{Allow: []string{closed + "/crm/", web.URL + "/crm/"}, Timeout: host.Duration(time.Second), MaxBytes: 1024},
		PII: host.PIIConfig{
			Detect:    []string{"email"},
			Names:     []string{"Ada Lovelace"},
			RestoreTo: []string{"fetch:" + closed + "/crm/", "fetch:" + web.URL + "/crm/"},
		},
	}
	nameToken := regexp.MustCompile(`PII_NAME_[0-9a-f]{12}`)
	var email, name string
	model := llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		n := len(r.Messages)
		if n == 2 {
			email, name = emailToken.FindString(r.Messages[1].Content), nameToken.FindString(r.Messages[1].Content)
		}
		if i := (n - 2) / 2; i < len(targets) {
			return toolCall(fmt.Sprintf("c%d", i), "exec_tool", fmt.Sprintf(`{"path":"tools/crm/lookup.ts","args":{"url":%q,"email":%q,"name":%q}}`, targets[i], email, name))
		}
		return llmtest.Step{Content: "done"}
	})
	defer model.Close()
	cfg.LLM = host.LLMConfig{BaseURL: model.URL(), Model: "scripted"}
	rt, err := host.Start(ctx, withQuiet(cfg))
	if err != nil {
		t.Fatal(err)
	}
	write(t, rt, "tools/crm/lookup.ts", lookupTool)
	res, err := rt.RunAgent(ctx, "Look Ada Lovelace (ada@example.com) up in the CRM.", host.AgentOptions{Name: "crm-agent"})
	if err != nil || model.Err() != nil {
		t.Fatalf("agent: %v; model: %v", err, model.Err())
	}
	if res.Reason != agent.ReasonAnswer || len(res.Calls) != len(targets) || email == "" || name == "" {
		t.Fatalf("agent result %+v; tokens %q %q", res, email, name)
	}
	// The same calls straight through the kernel: the tool's own result
	// and error.
	var direct []string
	for _, u := range targets {
		out, err := rt.Call(ctx, "exec_tool", json.RawMessage(fmt.Sprintf(`{"path":"tools/crm/lookup.ts","args":{"url":%q,"email":%q,"name":%q}}`, u, email, name)))
		direct = append(direct, fmt.Sprintf("%s %v", out, err))
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	close(received)

	real := []string{"ada@example.com", "Ada Lovelace"}
	// The target got the real values (the lookups are not pointless).
	n := 0
	for got := range received {
		n++
		if !strings.Contains(got, "ada%40example.com") || !strings.Contains(got, `"email":"ada@example.com"`) || !strings.Contains(got, "Ada%20Lovelace") {
			t.Errorf("the target received %q, want the real values", got)
		}
	}
	if n != 6 { // slow, big and echo, twice
		t.Errorf("the server received %d requests, want 6", n)
	}
	// Each failure reached the model as such, with the token in place.
	var sawErr int
	for i, r := range model.Received() {
		for _, v := range real {
			if echoLeaks(string(r.Raw), v) {
				t.Errorf("model request %d holds %q in some encoding: %s", i+1, v, r.Raw)
			}
		}
		if i == len(targets) { // the last request holds every tool answer
			for _, want := range []string{"refused", "no answer within", "larger than 1024 bytes", "path=/crm/echo/" + name} {
				if bytes.Contains(r.Raw, []byte(want)) {
					sawErr++
				}
			}
		}
	}
	if sawErr != 4 {
		t.Errorf("the model saw %d of the 4 outcomes (refused, timeout, too big, echo) in %s", sawErr, model.Received()[len(targets)].Raw)
	}
	for i, d := range direct {
		for _, v := range real {
			if echoLeaks(d, v) {
				t.Errorf("exec_tool %s answered %q in some encoding: %s", targets[i], v, d)
			}
		}
		if !strings.Contains(d, email) {
			t.Errorf("exec_tool %s answered %s, without the e-mail's token %s in place", targets[i], d, email)
		}
	}
	jb, err := os.ReadFile(filepath.Join(root, host.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range real {
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(url.QueryEscape(v), "+", "%20"), strings.ToLower(url.QueryEscape(v))} {
			if bytes.Contains(bytes.ToLower(jb), bytes.ToLower([]byte(form))) {
				t.Errorf("the journal file holds %q as %q", v, form)
			}
		}
	}
	if !bytes.Contains(jb, []byte(email)) {
		t.Errorf("the journal file does not hold the token %s: did the runs journal anything?", email)
	}
}
