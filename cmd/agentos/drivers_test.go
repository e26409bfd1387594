package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
)

// everyDriverTool reaches every driver a tool has: sql (positional and
// named parameters), fetch with a named secret, fs, clock and random.
const everyDriverTool = `/** Reaches every driver and reports what each answered. */
export default async function (args: { url: string }): Promise<unknown> {
  await tgp.exec_sql('CREATE TABLE IF NOT EXISTS hits (n INTEGER)');
  await tgp.exec_sql('INSERT INTO hits (n) VALUES (:n)', { n: 7 });
  const sql = await tgp.exec_sql('SELECT count(*) AS c FROM hits WHERE n = ?', [7]);
  const res = await tgp.fetch(args.url, { auth: 'svc' });
  const text = await tgp.read_file('/lib/hello.txt');
  const secret = await tgp.read_file('tools/private/key.txt');
  const now = Date.now();
  const r = Math.random();
  return { sql: sql.rows[0].c > 0, fetch: res.status === 200 && res.body === 'token accepted', fs: text, secretLength: secret.length, clock: now > 0, random: r >= 0 && r < 1 };
}
`

// everyDriverRoot makes a tool root whose agentos.json enables every
// driver and setting an entry point must carry over: sql, fetch with an
// allow-list and a secret, secret_paths, llm, limits, confine.
func everyDriverRoot(t *testing.T) (root, url string) {
	t.Helper()
	const token = "s3cr3t-token-value"
	t.Setenv("AGENTOS_TEST_SVC_TOKEN", token)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != token {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "token accepted")
	}))
	t.Cleanup(srv.Close)
	root = toolRoot(t, map[string]string{
		"tools/every.ts":        everyDriverTool,
		"tools/hello.txt":       "hello",
		"tools/private/key.txt": "top secret",
	})
	cfg := fmt.Sprintf(`{
  "isolation": "process",
  "confine": "best_effort",
  "limits": {"timeout": "30s", "memory_mb": 256},
  "fetch": {"allow": [%[1]q]},
  "secrets": {"svc": {"env": "AGENTOS_TEST_SVC_TOKEN", "header": "X-Token", "allow": [%[1]q]}},
  "secret_paths": ["tools/private/"],
  "sql": {"sqlite": ".agentos/data.db", "max_rows": 100},
  "llm": {"base_url": %[2]q, "model": "test-model"}
}
`, srv.URL+"/", srv.URL+"/v1")
	if err := os.WriteFile(filepath.Join(root, host.ConfigFile), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, srv.URL + "/hello"
}

// wantEveryDriver checks the tool's result: each driver answered.
func wantEveryDriver(t *testing.T, how string, result json.RawMessage) {
	t.Helper()
	var got struct {
		SQL, Fetch, Clock, Random bool
		FS                        string `json:"fs"`
		SecretLength              int    `json:"secretLength"`
	}
	if err := json.Unmarshal(result, &got); err != nil {
		t.Fatalf("%s: result %s: %v", how, result, err)
	}
	if !got.SQL || !got.Fetch || !got.Clock || !got.Random || got.FS != "hello" || got.SecretLength != len("top secret") {
		t.Fatalf("%s: a driver is missing or misconfigured: %s", how, result)
	}
}

// Issue 11, item 4: every CLI entry point that runs tools gives a tool the
// drivers agentos.json configures, exactly as a runtime (call, serve) does.
// Before the fix, 'agentos exec' (and replay, recover, the demo) built the
// executor without the sql driver: exec_sql failed with 'no "sql" driver is
// configured for this runtime'.
func TestEveryEntryPointHasEveryDriver(t *testing.T) {
	root, url := everyDriverRoot(t)
	args := fmt.Sprintf(`{"url": %q}`, url)

	// exec, in a sandbox worker and in-process.
	for _, mode := range [][]string{nil, {"--inprocess"}} {
		cmd := append(append([]string{"exec", "--root", root, "--json"}, mode...), "tools/every.ts", args)
		code, stdout, stderr := cli(t, cmd...)
		var res struct {
			Success bool
			Result  json.RawMessage
			Error   *struct{ Kind, Message string }
			Run     string
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || !res.Success {
			t.Fatalf("%v: exit %d %s %s (%v)", cmd, code, stdout, stderr, err)
		}
		wantEveryDriver(t, strings.Join(cmd[:4], " "), res.Result)

		// replay of the recorded run: the same answers, offline.
		code, stdout, stderr = cli(t, "replay", "--root", root, "--json", res.Run)
		var rep struct {
			Same   bool
			Result struct{ Result json.RawMessage }
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 || !rep.Same {
			t.Fatalf("replay %s: exit %d %s %s (%v)", res.Run, code, stdout, stderr, err)
		}
		wantEveryDriver(t, "replay", rep.Result.Result)
	}

	// call exec_tool: a runtime started for the call (agentos.Start).
	code, stdout, stderr := cli(t, "call", "--root", root, "--json", "exec_tool", fmt.Sprintf(`{"path": "tools/every.ts", "args": %s}`, args))
	var called struct {
		Success bool
		Result  json.RawMessage
	}
	if err := json.Unmarshal([]byte(stdout), &called); err != nil || code != 0 || !called.Success {
		t.Fatalf("call exec_tool: exit %d %s %s (%v)", code, stdout, stderr, err)
	}
	wantEveryDriver(t, "call exec_tool", called.Result)

	// recover: a run its host died under before its first driver call is
	// resumed live, with every driver.
	cfg, err := host.LoadConfig(root)
	if err != nil {
		t.Fatal(err)
	}
	j, err := cfg.OpenJournal(root, "")
	if err != nil {
		t.Fatal(err)
	}
	src := []byte(everyDriverTool)
	hash := transpile.Hash(src)
	if err := j.PutSource(hash, src); err != nil {
		t.Fatal(err)
	}
	run, err := j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/every.ts", Hash: hash, Args: json.RawMessage(args), Host: journal.Host{Isolation: "process"}})
	if err != nil {
		t.Fatal(err)
	}
	id := run.ID()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = cli(t, "recover", "--root", root, "--json")
	var wrapped struct {
		Recovered []struct {
			Run     struct{ ID string }
			Resumed bool
			Reason  string
			Result  struct {
				Success bool
				Result  json.RawMessage
			}
		} `json:"recovered"`
	}
	err = json.Unmarshal([]byte(stdout), &wrapped)
	reports := wrapped.Recovered
	if err != nil || code != 0 || len(reports) != 1 || reports[0].Run.ID != id || !reports[0].Resumed || !reports[0].Result.Success {
		t.Fatalf("recover: exit %d %s %s (%v)", code, stdout, stderr, err)
	}
	wantEveryDriver(t, "recover", reports[0].Result.Result)
}

// Issue 11 ("the paths cannot drift"): the CLI's journal commands read and
// write the journal agentos.json names, as a runtime does. Before, exec,
// runs, replay and recover used .agentos/journal.db whatever "journal" said,
// so runs recorded by serve or call were invisible to them.
func TestCLIUsesTheConfiguredJournal(t *testing.T) {
	root := toolRoot(t, map[string]string{"tools/math/fib.ts": fibSrc})
	if err := os.WriteFile(filepath.Join(root, host.ConfigFile), []byte(`{"journal": "state/runs.db"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, "exec", "--root", root, "tools/math/fib.ts", `{"n": 10}`); code != 0 {
		t.Fatalf("exec: %d %s", code, stderr)
	}
	code, stdout, stderr := cli(t, "call", "--root", root, "exec_tool", `{"path": "tools/math/fib.ts", "args": {"n": 11}}`)
	if code != 0 {
		t.Fatalf("call: %d %s %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "state", "runs.db")); err != nil {
		t.Fatalf("the configured journal was not written: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, host.JournalFile)); err == nil {
		t.Fatalf("a journal was written at the default %s although agentos.json names state/runs.db", host.JournalFile)
	}
	code, stdout, stderr = cli(t, "runs", "--root", root, "--json")
	if code != 0 || strings.Count(stdout, `"tools/math/fib.ts"`) != 2 {
		t.Fatalf("runs must list the exec and the call runs: %d %s %s", code, stdout, stderr)
	}
}
