package e2e_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/host"
)

// Issue 25 item 5: with sql in restore_to, a query that transforms the
// restored value (replace '@' by ' (at) ', hex, upper, reverse,
// separators dropped) sent the real e-mail back to the caller and the
// journal, since only the value's encodings were looked for (base64 is
// tested in package pii: SQLite has none). The
// transformed forms run through a real SQLite database behind the real
// sql driver; none may reach the caller or the journal's bytes, and each
// comes back as the token.
func TestPIIRestoredValueTransformedBySQL(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := host.Config{
		Root: root, Isolation: "inprocess",
		PII: host.PIIConfig{Detect: []string{"email", "phone"}, RestoreTo: []string{"sql"}},
	}
	if err := os.MkdirAll(filepath.Join(root, host.StateDir), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := driver.OpenDatabase(driver.DatabaseOptions{SQLite: cfg.SQLitePath(root), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	rt, err := host.Start(ctx, withQuiet(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	const email, phone = "ada.lovelace@example.com", "+44 20 7946 0958"
	etok, err := rt.PII().String(email)
	if err != nil {
		t.Fatal(err)
	}
	ptok, err := rt.PII().String(phone)
	if err != nil {
		t.Fatal(err)
	}
	write(t, rt, "tools/q.ts", queryTool)
	forms := map[string]string{ // column: SQL expression over ?1 (the e-mail) or ?2 (the phone)
		"at":       `replace(?1, '@', ' (at) ')`,
		"atdot":    `replace(replace(?1, '@', ' [at] '), '.', ' dot ')`,
		"hex":      `hex(?1)`,
		"hexlower": `lower(hex(upper(?1)))`,
		"upper":    `upper(?1)`,
		"bare":     `replace(replace(?1, '@', ''), '.', '')`,
		"dashes":   `replace(replace(?1, '@', '-'), '.', '_')`,
		"phone":    `replace(replace(?2, ' ', ''), '+', '00')`,
		"phonehex": `'0x' || hex(?2)`,
		"reversed": `(WITH RECURSIVE r(i, o) AS (SELECT length(?1), '' UNION ALL SELECT i-1, o || substr(?1, i, 1) FROM r WHERE i > 0) SELECT o FROM r WHERE i = 0)`,
	}
	var cols []string
	for name, expr := range forms {
		cols = append(cols, expr+" AS "+name)
	}
	q := "SELECT " + strings.Join(cols, ", ")
	out, err := rt.Call(ctx, "exec_tool", json.RawMessage(fmt.Sprintf(`{"path":"tools/q.ts","args":{"sql":%q,"params":[%q,%q]}}`, q, etok, ptok)))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Success bool
		Result  struct {
			Rows []map[string]any `json:"rows"`
		}
	}
	if err := json.Unmarshal(out, &res); err != nil || !res.Success || len(res.Result.Rows) != 1 {
		t.Fatalf("the tool answered %s (%v), want one row", out, err)
	}
	if got := fmt.Sprint(res.Result.Rows[0]["hex"]); strings.HasPrefix(got, hex.EncodeToString([]byte("PII_"))) {
		t.Fatalf("hex(?1) answered %s, the token's hex: the e-mail was not restored for sql", got)
	}
	leaks := leakForms(email, phone)
	for name := range forms {
		got := fmt.Sprint(res.Result.Rows[0][name])
		for _, l := range leaks {
			if strings.Contains(strings.ToLower(got), strings.ToLower(l)) {
				t.Errorf("column %s answered %q: it holds %q, a transformed real value", name, got, l)
			}
		}
		if !strings.Contains(got, etok) && !strings.Contains(got, ptok) {
			t.Errorf("column %s answered %q, want the token in place of the value", name, got)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	jb, err := os.ReadFile(filepath.Join(root, host.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leaks {
		if bytes.Contains(bytes.ToLower(jb), []byte(strings.ToLower(l))) {
			t.Errorf("the journal file holds %q, a transformed real value", l)
		}
	}
	if !bytes.Contains(jb, []byte(etok)) {
		t.Errorf("the journal file does not hold the token %s: was the query journaled?", etok)
	}
}

const queryTool = `/** Runs one query with its parameters; returns its rows. */
export default async function (a: { sql: string; params: string[] }): Promise<unknown> {
  return await tgp.exec_sql(a.sql, a.params);
}
`

// leakForms is what of the real values must never come back: their
// distinctive parts, in the forms the query produced.
func leakForms(email, phone string) []string {
	return []string{
		"lovelace (at) example", "lovelace [at] example", "lovelace-example_com", "ada.lovelace",
		"adalovelaceexamplecom", "lovelace", hex.EncodeToString([]byte(email)), hex.EncodeToString([]byte(phone)),
		"00442079460958", reverse(email),
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
