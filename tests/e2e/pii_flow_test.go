package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentos-run/agentos/actors/executor"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

// The personal data of the table the tools read: none of it may reach the
// model or the journal.
var piiValues = []string{"ada@example.com", "+44 20 7946 0958", "grace@navy.example", "(555) 123-4567", "Ada Lovelace", "Grace Hopper"}

const contactsTool = `/** Lists the contacts: name, e-mail and phone, at most limit of them. */
export default async function (a: { limit: number }): Promise<{ name: string; email: string; phone: string }[]> {
  const r = await tgp.exec_sql("SELECT name, email, phone FROM contacts ORDER BY id LIMIT ?", [a.limit]);
  return r.rows;
}
`

const sendTool = `/** Posts one contact to a URL (its e-mail in the query, e-mail and phone in the body); returns the status and the answer. */
export default async function (a: { url: string; email: string; phone: string }): Promise<string> {
  const r = await tgp.fetch(a.url + "?to=" + encodeURIComponent(a.email), { method: "POST", body: JSON.stringify({ email: a.email, phone: a.phone }) });
  return r.status + " " + r.body;
}
`

// recorder is the fetch target: it keeps what each path received and
// echoes the e-mail back (so the answer must be tokenized too).
type recorder struct {
	mu  sync.Mutex
	got map[string][]string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got[r.URL.Path] = append(rc.got[r.URL.Path], r.URL.Query().Get("to")+" "+string(body))
	rc.mu.Unlock()
	_, _ = fmt.Fprintf(w, "received %s", r.URL.Query().Get("to"))
}

func (rc *recorder) received(path string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return strings.Join(rc.got[path], "\n")
}

var (
	emailToken = regexp.MustCompile(`PII_EMAIL_[0-9a-f]{12}`)
	phoneToken = regexp.MustCompile(`PII_PHONE_[0-9a-f]{12}`)
)

// The epic's privacy flow end to end, with a real SQLite table, a
// scripted model over HTTP and a real HTTP server: the model sees tokens
// only, the allowed fetch target receives the real values and another one
// tokens, the journal's bytes hold no real value, the map survives a
// restart, and the runs replay with the map deleted.
func TestPIIFlow(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	target := &recorder{got: map[string][]string{}}
	web := httptest.NewServer(target)
	defer web.Close()

	// The table, written before any runtime (nothing journals it).
	cfg := host.Config{
		Root: root, Isolation: "inprocess",
		Fetch: host.FetchConfig{Allow: []string{web.URL + "/"}},
		PII: host.PIIConfig{
			Detect:    []string{"email", "phone"},
			Names:     []string{"Ada Lovelace", "Grace Hopper"},
			RestoreTo: []string{"sql", "fetch:" + web.URL + "/crm/"},
		},
	}
	if err := os.MkdirAll(filepath.Join(root, host.StateDir), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := driver.OpenDatabase(driver.DatabaseOptions{SQLite: cfg.SQLitePath(root), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT, email TEXT, phone TEXT);
		INSERT INTO contacts (name, email, phone) VALUES ('Ada Lovelace', 'ada@example.com', '+44 20 7946 0958'), ('Grace Hopper', 'grace@navy.example', '(555) 123-4567')`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	// The scripted model: read the contacts, send Ada's to the CRM
	// (allowed) and to the log (not allowed), look her phone up by e-mail
	// with exec_sql, answer.
	var email, phone, lookedUp string
	model := llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		last := r.Messages[len(r.Messages)-1].Content
		switch n := len(r.Messages); {
		case n == 2:
			return toolCall("c1", "exec_tool", `{"path":"tools/crm/contacts.ts","args":{"limit":10}}`)
		case n == 4:
			email, phone = emailToken.FindString(last), phoneToken.FindString(last)
			return toolCall("c2", "exec_tool", fmt.Sprintf(`{"path":"tools/crm/send.ts","args":{"url":%q,"email":%q,"phone":%q}}`, web.URL+"/crm/contacts", email, phone))
		case n == 6:
			return toolCall("c3", "exec_tool", fmt.Sprintf(`{"path":"tools/crm/send.ts","args":{"url":%q,"email":%q,"phone":%q}}`, web.URL+"/log/contacts", email, phone))
		case n == 8:
			return toolCall("c4", "exec_sql", fmt.Sprintf(`{"sql":"SELECT phone FROM contacts WHERE email = ?","params":[%q]}`, email))
		default:
			lookedUp = last
			return llmtest.Step{Content: "Sent " + email + "; phone " + phone}
		}
	})
	defer model.Close()
	cfg.LLM = host.LLMConfig{BaseURL: model.URL(), Model: "scripted"}

	rt, err := host.Start(ctx, withQuiet(cfg))
	if err != nil {
		t.Fatal(err)
	}
	write(t, rt, "tools/crm/contacts.ts", contactsTool)
	write(t, rt, "tools/crm/send.ts", sendTool)
	res, err := rt.RunAgent(ctx, "Send Ada Lovelace's contact (ada@example.com) to the CRM.", host.AgentOptions{Name: "crm-agent"})
	if err != nil || model.Err() != nil {
		t.Fatalf("agent: %v; model: %v", err, model.Err())
	}
	if res.Reason != agent.ReasonAnswer || len(res.Calls) != 4 {
		t.Fatalf("agent result: %+v", res)
	}
	for _, c := range res.Calls {
		if c.Error != "" {
			t.Fatalf("call %s failed: %s", c.Tool, c.Error)
		}
	}
	if email == "" || phone == "" {
		t.Fatal("the model got no e-mail or phone token in the contacts")
	}

	// 1. The model received tokens only: every byte of every request.
	for i, r := range model.Received() {
		for _, v := range piiValues {
			if bytes.Contains(r.Raw, []byte(v)) {
				t.Errorf("model request %d holds the real value %q", i+1, v)
			}
		}
	}
	if got := model.Received()[0].Messages[1].Content; !strings.Contains(got, email) || !strings.Contains(got, "PII_NAME_") {
		t.Errorf("the task reached the model as %q, want Ada's name and e-mail as tokens", got)
	}
	// 2. The allowed target got the real values (query and body); the
	// other one got the tokens; the echoed value came back as a token.
	if got := target.received("/crm/contacts"); !strings.Contains(got, "ada@example.com") || !strings.Contains(got, "+44 20 7946 0958") || strings.Contains(got, "PII_") {
		t.Errorf("the CRM (in restore_to) received %q, want the real e-mail and phone", got)
	}
	if got := target.received("/log/contacts"); !strings.Contains(got, email) || !strings.Contains(got, phone) || strings.Contains(got, "@example.com") {
		t.Errorf("the log (not in restore_to) received %q, want the tokens", got)
	}
	// 3. exec_sql (sql is in restore_to) found the row by the real e-mail,
	// and answered the phone as a token.
	if !strings.Contains(lookedUp, phone) {
		t.Errorf("exec_sql by the e-mail's token answered %q, want the row's phone as %s", lookedUp, phone)
	}
	if res.Answer != "Sent "+email+"; phone "+phone {
		t.Errorf("answer %q", res.Answer)
	}
	if back, _, err := rt.PII().RestoreString(res.Answer); err != nil || back != "Sent ada@example.com; phone +44 20 7946 0958" {
		t.Errorf("the embedding program restores the answer to %q, %v", back, err)
	}
	runs, err := rt.Journal().Runs()
	if err != nil {
		t.Fatal(err)
	}
	var execRuns []string
	for _, r := range runs {
		if r.Kind == "exec" {
			execRuns = append(execRuns, r.ID)
		}
	}
	if len(execRuns) != 3 {
		t.Fatalf("%d exec runs journaled, want 3", len(execRuns))
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	// 4. The journal file holds no real value, nor the map.
	jb, err := os.ReadFile(filepath.Join(root, host.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range piiValues {
		if bytes.Contains(jb, []byte(v)) {
			t.Errorf("the journal file holds the real value %q", v)
		}
	}
	if !bytes.Contains(jb, []byte(email)) {
		t.Errorf("the journal file does not hold the token %s: did the runs journal anything?", email)
	}
	for _, f := range []string{host.PIIKeyFile, host.PIIMapFile} {
		if fi, err := os.Stat(filepath.Join(root, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want a 0600 file", f, err, fi)
		}
	}

	// 5. After a restart, tokens are the same and the map restores them.
	rt2, err := host.Start(ctx, withQuiet(cfg))
	if err != nil {
		t.Fatal(err)
	}
	out, err := rt2.Call(ctx, "exec_tool", json.RawMessage(fmt.Sprintf(`{"path":"tools/crm/send.ts","args":{"url":%q,"email":%q,"phone":%q}}`, web.URL+"/crm/again", email, phone)))
	if err != nil {
		t.Fatal(err)
	}
	var again kerneltools.ExecResult
	_ = json.Unmarshal(out, &again)
	if got := target.received("/crm/again"); !again.Success || !strings.Contains(got, "ada@example.com") {
		t.Errorf("after a restart the CRM received %q (%s), want the real e-mail from the durable map", got, out)
	}
	out, err = rt2.Call(ctx, "exec_tool", json.RawMessage(`{"path":"tools/crm/contacts.ts","args":{"limit":1}}`))
	if err != nil || !strings.Contains(string(out), email) || !strings.Contains(string(out), phone) {
		t.Errorf("after a restart the contacts read %s (%v), want the same tokens %s and %s", out, err, email, phone)
	}
	if err := rt2.Close(); err != nil {
		t.Fatal(err)
	}

	// 6. With the map deleted, every run replays identically (a replay
	// calls no driver: the journal's tokens are served as recorded), and
	// the replay does not even open the map.
	if err := os.Remove(filepath.Join(root, host.PIIMapFile)); err != nil {
		t.Fatal(err)
	}
	j, err := cfg.OpenJournal(root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	setup, err := cfg.OpenExecutorSetup(root, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	ex, err := setup.NewExecutor(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	for _, id := range execRuns {
		rep, err := executor.Replay(ctx, ex, j, id, nil)
		if err != nil || !rep.Same || rep.Divergence != nil {
			t.Errorf("replay of %s without the map: %+v, %v", id, rep, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, host.PIIMapFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the replay opened the token map: %v", err)
	}
}

func withQuiet(cfg host.Config) host.Config {
	cfg.Logger = quiet
	return cfg
}
