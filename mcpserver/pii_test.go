package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP client is a model's host: with pii configured, what it receives
// holds tokens, never the values, whether a kernel tool or a registered
// tool answered, and exec_sql's arguments are restored where restore_to
// allows sql, so the client can still select by a token.
func TestPIITokenizedForClients(t *testing.T) {
	e := newEnv(t, host.Config{PII: host.PIIConfig{Detect: []string{"email"}, Names: []string{"Ada Lovelace"}, RestoreTo: []string{"sql"}}})
	srv, err := e.rt.MCPServer()
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	ch := newChanges()
	cs := e.connect(t, e.rt.Agent(), &mcp.ClientOptions{ToolListChangedHandler: ch.handler})
	const email, name = "ada@example.com", "Ada Lovelace"

	mustOK(t, "exec_sql", call(t, cs, "exec_sql", map[string]any{"sql": "CREATE TABLE people (name TEXT, email TEXT)"}))
	mustOK(t, "exec_sql", call(t, cs, "exec_sql", map[string]any{"sql": "INSERT INTO people VALUES (?, ?)", "params": []any{name, email}}))
	got := mustOK(t, "exec_sql", call(t, cs, "exec_sql", map[string]any{"sql": "SELECT name, email FROM people"}))
	if strings.Contains(got, email) || strings.Contains(got, name) || !strings.Contains(got, "PII_EMAIL_") || !strings.Contains(got, "PII_NAME_") {
		t.Fatalf("exec_sql answered the client %s: want tokens, not the values", got)
	}
	token := got[strings.Index(got, "PII_EMAIL_"):]
	token = token[:strings.IndexAny(token, `"\ `)]
	// The client selects by the token: restored on the way to sql.
	got = mustOK(t, "exec_sql", call(t, cs, "exec_sql", map[string]any{"sql": "SELECT count(*) AS n FROM people WHERE email = ?", "params": []any{token}}))
	if !strings.Contains(got, `1`) {
		t.Errorf("exec_sql by the token %s = %s, want the one row", token, got)
	}

	const tool = `/** Greets a contact by e-mail. */
export default function greet(args: { to: string }): string {
  return "mail to " + args.to + " <` + email + `>";
}
`
	mustOK(t, "write_file", call(t, cs, "write_file", map[string]any{"path": "tools/greet.ts", "content": tool}))
	// The new tool is listed once the server announced it.
	ch.until(t, "greet listed", func() bool { _, ok := listTools(t, cs)["greet"]; return ok })
	for _, res := range []string{
		mustOK(t, "greet", call(t, cs, "greet", map[string]any{"to": "Bob"})),
		mustOK(t, "exec_tool", call(t, cs, "exec_tool", map[string]any{"path": "tools/greet.ts", "args": map[string]any{"to": "Bob"}})),
		mustOK(t, "read_file", call(t, cs, "read_file", map[string]any{"path": "tools/greet.ts"})),
	} {
		if strings.Contains(res, email) || !strings.Contains(res, "PII_EMAIL_") {
			t.Errorf("the client received %s: want the e-mail as a token", res)
		}
	}
	res := call(t, cs, "read_file", map[string]any{"path": "tools/" + email})
	if !res.IsError || strings.Contains(text(res), email) {
		t.Errorf("a failed read_file answered the client %v %s: want an error with the e-mail as a token", res.IsError, text(res))
	}
}
