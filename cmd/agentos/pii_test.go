package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/host"
)

// The CLI's entry points run tools through the same pii wrapping as a
// runtime: 'agentos exec' sees tokens from SQLite, an allowed fetch target
// gets the real value back, the journal holds no real value, and
// 'agentos replay' replays every run with the token map deleted.
func TestCLIExecAndReplayWithPII(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.Path+" "+string(b))
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	root := toolRoot(t, map[string]string{
		"tools/contacts.ts": `/** Lists the contacts' e-mails. */
export default async function (a: { limit: number }): Promise<string[]> {
  const r = await tgp.exec_sql("SELECT email FROM contacts ORDER BY id LIMIT ?", [a.limit]);
  return r.rows.map((x: { email: string }) => x.email);
}
`,
		"tools/post.ts": `/** Posts a text to a URL and returns the status. */
export default async function (a: { url: string; text: string }): Promise<number> {
  const r = await tgp.fetch(a.url, { method: "POST", body: a.text });
  return r.status;
}
`,
	})
	cfg := fmt.Sprintf(`{"isolation": "inprocess", "fetch": {"allow": [%q]}, "pii": {"detect": ["email"], "restore_to": [%q]}}`, srv.URL+"/", "fetch:"+srv.URL+"/crm/")
	if err := os.WriteFile(filepath.Join(root, host.ConfigFile), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := host.LoadConfig(root)
	if err != nil {
		t.Fatal(err)
	}
	db, err := driver.OpenDatabase(driver.DatabaseOptions{SQLite: c.SQLitePath(root)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT); INSERT INTO contacts (email) VALUES ('ada@example.com')`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	type execOut struct {
		Success bool
		Result  json.RawMessage
		Run     string
	}
	exec := func(args ...string) execOut {
		t.Helper()
		code, stdout, stderr := cli(t, append([]string{"exec", "--root", root, "--json"}, args...)...)
		var res execOut
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || !res.Success {
			t.Fatalf("exec %v: exit %d %s %s (%v)", args, code, stdout, stderr, err)
		}
		return res
	}
	read := exec("tools/contacts.ts", `{"limit": 5}`)
	token := regexp.MustCompile(`PII_EMAIL_[0-9a-f]{12}`).FindString(string(read.Result))
	if token == "" || strings.Contains(string(read.Result), "ada@") {
		t.Fatalf("exec read %s, want the e-mail as a token", read.Result)
	}
	runs := []string{read.Run}
	for _, path := range []string{"/crm/in", "/log/in"} {
		runs = append(runs, exec("tools/post.ts", fmt.Sprintf(`{"url": %q, "text": "to %s"}`, srv.URL+path, token)).Run)
	}
	mu.Lock()
	if len(got) != 2 || got[0] != "/crm/in to ada@example.com" || got[1] != "/log/in to "+token {
		t.Errorf("the targets received %q, want the real value at /crm/ only", got)
	}
	mu.Unlock()
	jb, err := os.ReadFile(filepath.Join(root, host.JournalFile))
	if err != nil || bytes.Contains(jb, []byte("ada@example.com")) || !bytes.Contains(jb, []byte(token)) {
		t.Fatalf("the journal (%v) holds the real value, or not the token", err)
	}
	if err := os.Remove(filepath.Join(root, host.PIIMapFile)); err != nil {
		t.Fatal(err)
	}
	srv.Close() // replay needs neither the map nor the server
	for _, id := range runs {
		code, stdout, stderr := cli(t, "replay", "--root", root, "--json", id)
		var rep struct{ Same bool }
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 || !rep.Same {
			t.Fatalf("replay %s without the map: exit %d %s %s (%v)", id, code, stdout, stderr, err)
		}
	}
}
