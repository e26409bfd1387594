// Command mcp-pii shows the privacy flow of PII tokenization: an agent's
// model reads a table of contacts through a tool and sends one to a CRM,
// without ever seeing an e-mail address or a phone number. The table is
// real SQLite, the model a scripted OpenAI-compatible server on loopback
// (package driver/llm/llmtest), the CRM and an audit log two loopback HTTP
// endpoints; only the CRM is in pii.restore_to. No network, no API key.
//
//	go run ./examples/mcp-pii
//
// It exits 1 if a real value reaches the model, the journal or the log, if
// the CRM does not get the real values, or if the runs do not replay with
// the token map deleted.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

const contactsTool = `/** Lists the contacts: name, e-mail and phone. */
export default async function (a: { limit: number }): Promise<{ name: string; email: string; phone: string }[]> {
  const r = await tgp.exec_sql("SELECT name, email, phone FROM contacts ORDER BY id LIMIT ?", [a.limit]);
  return r.rows;
}
`

const sendTool = `/** Posts a contact to a URL; returns the status and the answer. */
export default async function (a: { url: string; name: string; email: string; phone: string }): Promise<string> {
  const r = await tgp.fetch(a.url, { method: "POST", body: JSON.stringify({ name: a.name, email: a.email, phone: a.phone }) });
  return r.status + " " + r.body;
}
`

var personal = []string{"Ada Lovelace", "ada@example.com", "+44 20 7946 0958"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "agentos-mcp-pii-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	web := newEndpoints()
	defer web.Close()

	cfg := host.Config{
		Root: root, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler),
		Fetch: host.FetchConfig{Allow: []string{web.URL + "/"}},
		PII: host.PIIConfig{
			Detect:    []string{"email", "phone"},
			Names:     []string{"Ada Lovelace"},
			RestoreTo: []string{"fetch:" + web.URL + "/crm/"},
		},
	}
	if err := seedContacts(cfg, root); err != nil {
		return err
	}
	var seen string
	model := scriptedModel(web.URL, &seen)
	defer model.Close()
	fmt.Println("scripted model at", model.URL())
	cfg.LLM = host.LLMConfig{BaseURL: model.URL(), Model: "scripted"}

	runs, err := runAgent(ctx, cfg, model)
	if err != nil {
		return err
	}
	fmt.Println("the model read the contacts as:", firstLine(seen))
	if err := checkPrivacy(model, web, root); err != nil {
		return err
	}
	return replayWithoutMap(ctx, cfg, root, runs)
}

// endpoints are the CRM and the audit log: one loopback HTTP server that
// keeps the body each path received.
type endpoints struct {
	*httptest.Server
	mu       sync.Mutex
	received map[string]string
}

func newEndpoints() *endpoints {
	e := &endpoints{received: map[string]string{}}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.received[r.URL.Path] = string(b)
		e.mu.Unlock()
		fmt.Fprint(w, "stored")
	}))
	return e
}

// seedContacts creates the SQLite table of contacts the tool reads.
func seedContacts(cfg host.Config, root string) error {
	if err := os.MkdirAll(filepath.Join(root, host.StateDir), 0o700); err != nil {
		return err
	}
	db, err := driver.OpenDatabase(driver.DatabaseOptions{SQLite: cfg.SQLitePath(root), Logger: cfg.Logger})
	if err != nil {
		return err
	}
	_, err = db.Exec(`CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT, email TEXT, phone TEXT);
		INSERT INTO contacts (name, email, phone) VALUES ('Ada Lovelace', 'ada@example.com', '+44 20 7946 0958')`)
	db.Close()
	return err
}

// scriptedModel is the model: read the contacts, send the first to the
// CRM and to the audit log, answer. It copies the tokens it was given;
// seen is what it read.
func scriptedModel(base string, seen *string) *llmtest.Server {
	token := func(kind, in string) string {
		return regexp.MustCompile(`PII_` + kind + `_[0-9a-f]{12}`).FindString(in)
	}
	return llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		last := r.Messages[len(r.Messages)-1].Content
		call := func(id, args string) llmtest.Step {
			return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: id, Name: "exec_tool", Arguments: args}}}
		}
		send := func(id, path string) llmtest.Step {
			return call(id, fmt.Sprintf(`{"path":"tools/crm/send.ts","args":{"url":%q,"name":%q,"email":%q,"phone":%q}}`, base+path, token("NAME", *seen), token("EMAIL", *seen), token("PHONE", *seen)))
		}
		switch len(r.Messages) {
		case 2:
			return call("c1", `{"path":"tools/crm/contacts.ts","args":{"limit":1}}`)
		case 4:
			*seen = last
			return send("c2", "/crm/contacts")
		case 6:
			return send("c3", "/audit/contacts")
		}
		return llmtest.Step{Content: "Sent the contact to the CRM and logged it."}
	})
}

// runAgent starts the runtime, writes the two tools, runs the agent and
// returns the journal's runs.
func runAgent(ctx context.Context, cfg host.Config, model *llmtest.Server) ([]journal.RunMeta, error) {
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	for path, src := range map[string]string{"tools/crm/contacts.ts": contactsTool, "tools/crm/send.ts": sendTool} {
		args := fmt.Sprintf(`{"path":%q,"content":%q}`, path, src)
		if _, err := rt.Call(ctx, "write_file", []byte(args)); err != nil {
			rt.Close()
			return nil, err
		}
	}
	res, err := rt.RunAgent(ctx, "Send our first contact to the CRM.", host.AgentOptions{Name: "crm"})
	if err == nil {
		err = model.Err()
	}
	runs, _ := rt.Journal().Runs()
	if cerr := rt.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	fmt.Println("agent:", res.Reason, "after", len(res.Calls), "tool calls:", res.Answer)
	return runs, nil
}

// checkPrivacy fails when a real value reached the model, the audit log
// or the journal, or when the CRM did not get the real values.
func checkPrivacy(model *llmtest.Server, web *endpoints, root string) error {
	for i, r := range model.Received() {
		for _, v := range personal {
			if bytes.Contains(r.Raw, []byte(v)) {
				return fmt.Errorf("model request %d holds %q", i+1, v)
			}
		}
	}
	fmt.Printf("the model was asked %d times; no request held a real value\n", model.Requests())
	web.mu.Lock()
	crm, audit := web.received["/crm/contacts"], web.received["/audit/contacts"]
	web.mu.Unlock()
	fmt.Println("the CRM (in restore_to) received:  ", crm)
	fmt.Println("the audit log (not in it) received:", audit)
	if crm != `{"name":"Ada Lovelace","email":"ada@example.com","phone":"+44 20 7946 0958"}` || strings.Contains(audit, "ada@") || !strings.Contains(audit, "PII_EMAIL_") {
		return errors.New("the CRM did not get the real values, or the log did")
	}
	jb, err := os.ReadFile(filepath.Join(root, host.JournalFile))
	if err != nil {
		return err
	}
	for _, v := range personal {
		if bytes.Contains(jb, []byte(v)) {
			return fmt.Errorf("the journal holds %q", v)
		}
	}
	fmt.Printf("the journal (%d bytes) holds no real value\n", len(jb))
	return nil
}

// replayWithoutMap replays every tool run with the token map deleted.
func replayWithoutMap(ctx context.Context, cfg host.Config, root string, runs []journal.RunMeta) error {
	if err := os.Remove(filepath.Join(root, host.PIIMapFile)); err != nil {
		return err
	}
	j, err := cfg.OpenJournal(root, "")
	if err != nil {
		return err
	}
	defer j.Close()
	setup, err := cfg.OpenExecutorSetup(root, cfg.Logger)
	if err != nil {
		return err
	}
	defer setup.Close()
	ex, err := setup.NewExecutor(nil)
	if err != nil {
		return err
	}
	defer ex.Close()
	n := 0
	for _, meta := range runs {
		if meta.Kind != "exec" {
			continue
		}
		rep, err := executor.Replay(ctx, ex, j, meta.ID, nil)
		if err != nil || !rep.Same {
			return fmt.Errorf("replay of %s: same %v, %v", meta.ID, rep.Same, err)
		}
		n++
	}
	fmt.Printf("replayed %d tool runs without the token map: all the same as recorded\n", n)
	fmt.Println("OK: the model moved the data without reading it; only the CRM got the real values")
	return nil
}

func firstLine(s string) string {
	if i := strings.Index(s, `"result":`); i >= 0 {
		s = s[i:]
	}
	if len(s) > 140 {
		s = s[:140] + "..."
	}
	return s
}
