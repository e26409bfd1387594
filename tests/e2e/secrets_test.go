package e2e_test

// Issue 10, items 5 and 7, end to end: real runtimes, real worker
// processes, real HTTP servers on loopback, the real bbolt file grepped
// for every secret after the runs.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// journalHolds fails the test when the journal file of root holds any of
// secrets, after checking that it holds every one of present (so that the
// scan can see the file's content at all).
func journalHolds(t *testing.T, file string, present []string, secrets ...string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range present {
		if !bytes.Contains(raw, []byte(p)) {
			t.Fatalf("the journal file does not contain %q: the scan would prove nothing", p)
		}
	}
	for _, s := range secrets {
		if i := bytes.Index(raw, []byte(s)); i >= 0 {
			t.Errorf("secret %q is in the journal file %s at offset %d: %q", s, file, i, raw[max(0, i-80):min(len(raw), i+len(s)+20)])
		}
	}
}

// echoServer answers every request with what it received: the
// credential headers and the request URI.
type echoServer struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
	uris []string
}

func newEchoServer(t *testing.T) *echoServer {
	e := &echoServer{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.auth = append(e.auth, r.Header.Get("Authorization"))
		e.uris = append(e.uris, r.RequestURI)
		e.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/admin") || strings.Contains(r.URL.Path, "..") {
			_, _ = w.Write([]byte("ADMIN-ONLY-DATA"))
			return
		}
		_, _ = w.Write([]byte("Authorization: " + r.Header.Get("Authorization") + "; X-Auth-Token: " + r.Header.Get("X-Auth-Token") + "; uri: " + r.RequestURI))
	}))
	t.Cleanup(e.Close)
	return e
}

const bindingTool = `/** Calls an API with named secrets and with credentials of its own. */
export default async function (a: { base: string; token: string; api_key: string }) {
  const r1 = await tgp.fetch(a.base + "/api/user", { auth: "svc" });
  const r2 = await tgp.fetch(a.base + "/api/search?q=x", { auth: "q" });
  const r3 = await tgp.fetch(a.base + "/api/own?access_token=" + a.api_key, { headers: { "X-Auth-Token": a.token } });
  let refused = "";
  try { await tgp.fetch(a.base + "/other", { auth: "svc" }); } catch (e) { refused = e.code; }
  return { r1: r1.body, r2: r2.body, r3: r3.body, refused };
}
`

// A tool uses a credential by name: the server gets it, the tool and the
// journal never do; credentials the tool sent itself (from its arguments)
// are scrubbed from the journal too, echoes included; the run replays
// offline with the secret's variable unset.
func TestFetchSecretBindingNeverInJournal(t *testing.T) {
	const (
		token  = "ghp-binding-token-0123456789"
		own    = "own-xauth-token-98765"
		ownKey = "own-query-key-55555"
	)
	t.Setenv("AGENTOS_TEST_SVC_TOKEN", token)
	srv := newEchoServer(t)
	root := t.TempDir()
	cfg := host.Config{Root: root, Fetch: host.FetchConfig{Allow: []string{srv.URL + "/"}}, Secrets: map[string]host.SecretConfig{
		"svc": {Env: "AGENTOS_TEST_SVC_TOKEN", Header: "Authorization", Format: "Bearer {}", Allow: []string{srv.URL + "/api/"}},
		"q":   {Env: "AGENTOS_TEST_SVC_TOKEN", Query: "api_key", Allow: []string{srv.URL + "/api/"}},
	}}
	rt := start(t, cfg)
	args, _ := json.Marshal(map[string]string{"base": srv.URL, "token": own, "api_key": ownKey})
	res := runTool(t, rt, "tools/gh.ts", bindingTool, string(args))
	if !res.Success {
		t.Fatalf("run: %+v", res.Error)
	}
	var out struct{ R1, R2, R3, Refused string }
	_ = json.Unmarshal(res.Result.Result, &out)
	if srv.auth[0] != "Bearer "+token || !strings.HasSuffix(srv.uris[1], "api_key="+token) {
		t.Fatalf("the server did not get the secret: %q %q", srv.auth, srv.uris)
	}
	if strings.Contains(string(res.Result.Result), token) || !strings.Contains(out.R1, "Authorization: [REDACTED]") {
		t.Errorf("the tool saw the secret: %s", res.Result.Result)
	}
	if out.Refused != "security" || len(srv.uris) != 3 {
		t.Errorf("a secret sent outside its prefixes: code %q, the server saw %q", out.Refused, srv.uris)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	journalHolds(t, filepath.Join(root, host.JournalFile), []string{"/api/user", `"auth":"svc"`, "X-Auth-Token: [REDACTED]"}, token, own, ownKey)

	// Offline, without the secret: the run replays.
	srv.Close()
	os.Unsetenv("AGENTOS_TEST_SVC_TOKEN")
	ex, err := executor.New(cfg.ExecutorOptions(root))
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	j, err := cfg.OpenJournal(root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	rep, err := executor.Replay(context.Background(), ex, j, res.RunID, nil)
	if err != nil || rep.Divergence != nil || !rep.Same {
		t.Fatalf("replay of the redacted run: %+v %v (divergence %v)", rep.Result, err, rep.Divergence)
	}
}

// The model's API key, echoed by the server in a successful answer, never
// reaches the journal: no driver registered its key before.
func TestModelKeyEchoedNotInJournal(t *testing.T) {
	const key = "sk-model-key-echoed-424242"
	t.Setenv("AGENTOS_LLM_API_KEY", key)
	model := llmtest.NewServer([]llmtest.Step{{Content: "Your key is " + key + ", keep it safe."}}, llmtest.WithKey(key))
	defer model.Close()
	root := t.TempDir()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: model.URL(), Model: "scripted"}})
	res, err := rt.RunAgent(context.Background(), "say hello", host.AgentOptions{MaxSteps: 2})
	if err != nil {
		t.Fatalf("agent: %+v %v (server: %v)", res, err, model.Err())
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	journalHolds(t, filepath.Join(root, host.JournalFile), []string{"keep it safe", "say hello"}, key)
}

const secretFileTool = `/** Reads the database password from the secrets file and uses it. */
export default async function (a: { path: string }) {
  const env = await tgp.read_file(a.path);
  const pw = env.split("\n").find((l: string) => l.startsWith("DB_PASSWORD=")).slice(12);
  await tgp.write_file("/tmp/copy.txt", "pw " + pw);
  return "connected with " + pw;
}
`

// A file under secret_paths is never journaled in clear, read directly or
// through a link; the run replays while the file is there and fails
// clearly ([AGENTOS-J004]) once it is gone.
func TestSecretFileNeverInJournal(t *testing.T) {
	const pw = "db-password-from-file-31337"
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "secrets.env"), []byte("# prod\nDB_PASSWORD="+pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := host.Config{Root: root, SecretPaths: []string{"secrets.env"}, Agent: host.AgentConfig{Grants: []capability.Grant{
		{Right: capability.Read}, {Right: capability.Write, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"},
	}}}
	rt := start(t, cfg)
	res := runTool(t, rt, "tools/db.ts", secretFileTool, `{"path":"secrets.env"}`)
	if !res.Success || string(res.Result.Result) != `"connected with `+pw+`"` {
		t.Fatalf("run: %s %+v", res.Result.Result, res.Error)
	}
	// Through links: a hard link and a symbolic link in tools/. The jail
	// may refuse them; if it does not, the read is sealed all the same.
	if err := os.Link(filepath.Join(root, "secrets.env"), filepath.Join(root, "tools", "hard.env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secrets.env", filepath.Join(root, "tools", "soft.env")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/lib/hard.env", "tools/soft.env"} {
		res := runTool(t, rt, "tools/db.ts", secretFileTool, `{"path":"`+p+`"}`)
		if res.Success && string(res.Result.Result) != `"connected with `+pw+`"` {
			t.Fatalf("run through %s: %s", p, res.Result.Result)
		}
		t.Logf("read through %s: success %v %s", p, res.Success, res.Error)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	jfile := filepath.Join(root, host.JournalFile)
	journalHolds(t, jfile, []string{"secrets.env", "sha256:", "connected with [REDACTED]"}, pw, "DB_PASSWORD="+pw)

	ex, err := executor.New(cfg.ExecutorOptions(root))
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	j, err := cfg.OpenJournal(root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	// Every read of the file, through a link or not, is sealed (not only
	// scrubbed by value because the file's content was known at start).
	runs, _ := j.Runs()
	sealed := 0
	for _, m := range runs {
		es, _ := j.Entries(m.ID)
		for _, e := range es {
			if e.Op == "read_file" && e.Error == nil {
				if e.Sealed == "" {
					t.Errorf("run %s: %s %s answered in the journal, not sealed: %s", m.ID, e.Op, e.Request, e.Response)
				}
				sealed++
			}
		}
	}
	if sealed == 0 {
		t.Fatal("no read of the secret file was recorded")
	}
	// The jail never reads a file with two hard links (it may be another
	// file's twin): take the twin away before replaying the direct read.
	if err := os.Remove(filepath.Join(root, "tools", "hard.env")); err != nil {
		t.Fatal(err)
	}
	rep, err := executor.Replay(context.Background(), ex, j, res.RunID, nil)
	if err != nil || rep.Divergence != nil || !rep.Same {
		t.Fatalf("replay with the file present: %+v %v %v", rep.Result, err, rep.Divergence)
	}
	for _, p := range []string{"secrets.env", "tools/hard.env", "tools/soft.env"} {
		os.Remove(filepath.Join(root, p))
	}
	rep, err = executor.Replay(context.Background(), ex, j, res.RunID, nil)
	if err != nil || rep.Divergence == nil || rep.Divergence.Code != journal.CodeSealed {
		t.Fatalf("replay with the file gone: divergence %v, err %v; want %s", rep.Divergence, err, journal.CodeSealed)
	}
	j.Close()
	journalHolds(t, jfile, []string{"secrets.env"}, pw)
}

// A caller's credentials passed as arguments (named password, key ...) and
// bound as SQL parameters never reach the journal.
func TestCredentialArgumentsInSQLNotInJournal(t *testing.T) {
	const pw = "arg-sql-password-777"
	root := t.TempDir()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess"})
	if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"CREATE TABLE accounts (name TEXT, pw TEXT)"}`)); err != nil {
		t.Fatal(err)
	}
	res := runTool(t, rt, "tools/acct.ts", `/** Stores an account. */
export default async function (a: { name: string; password: string }) {
  await tgp.exec_sql("INSERT INTO accounts (name, pw) VALUES (?, ?)", [a.name, a.password]);
  const r = await tgp.exec_sql("SELECT pw FROM accounts WHERE name = ?", [a.name]);
  return "stored " + r.rows[0].pw;
}
`, `{"name":"visible-name","password":"`+pw+`"}`)
	if !res.Success {
		t.Fatalf("run: %+v", res.Error)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	journalHolds(t, filepath.Join(root, host.JournalFile), []string{"visible-name", "INSERT INTO accounts"}, pw)
}

// The kernel's fetch scope, like fetch.allow, is checked on the canonical
// URL: a grant on /v1/ does not reach /admin through /v1/../admin.
func TestFetchScopeDotSegments(t *testing.T) {
	srv := newEchoServer(t)
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", Fetch: host.FetchConfig{Allow: []string{srv.URL + "/"}}})
	write(t, rt, "tools/get.ts", `/** Fetches a URL. */
export default async function (a: { url: string }) { return (await tgp.fetch(a.url)).body; }
`)
	p, err := rt.Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }, kernel.SpawnOptions{Grants: []capability.Grant{
		{Right: capability.Exec, Scope: "tools/"}, {Right: capability.Fetch, Scope: srv.URL + "/v1/"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"/v1/../admin/x", "/v1/%2e%2e/admin/x", "/v1/./../admin/x"} {
		out, err := rt.Node().Call(context.Background(), p, "exec_tool", json.RawMessage(`{"path":"tools/get.ts","args":{"url":"`+srv.URL+u+`"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "ADMIN-ONLY-DATA") || !strings.Contains(string(out), "refused") {
			t.Errorf("%s: %s", u, out)
		}
	}
	if len(srv.uris) != 0 {
		t.Errorf("the server was asked for %q", srv.uris)
	}
}

// Every file agentos creates is 0600 in a 0700 directory, even under a
// umask of 000, and state an older version left open is tightened at start.
func TestStateIsPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := t.TempDir()
	state := filepath.Join(root, host.StateDir)
	// What an older version left: a 0755 directory, a 0644 database.
	if err := os.MkdirAll(filepath.Join(state, "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "cache", "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := start(t, host.Config{Root: root, Isolation: "inprocess"})
	if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"CREATE TABLE t (x TEXT)"}`)); err != nil {
		t.Fatal(err)
	}
	writeFib(t, rt)
	check := func(when string) {
		t.Helper()
		for _, p := range []string{"", "cache", "cache/x", "journal.db", "data.db", "data.db-wal", "data.db-shm"} {
			fi, err := os.Stat(filepath.Join(state, p))
			if err != nil {
				if strings.HasSuffix(p, "-wal") || strings.HasSuffix(p, "-shm") {
					continue // checkpointed away
				}
				t.Fatalf("%s: %v", when, err)
			}
			want := os.FileMode(0o600)
			if fi.IsDir() {
				want = 0o700
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: %s is %v, want %v", when, filepath.Join(host.StateDir, p), fi.Mode().Perm(), want)
			}
		}
	}
	check("after Start")
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	// Loosened by hand: tightened again at the next start.
	for _, p := range []string{"journal.db", "data.db"} {
		os.Chmod(filepath.Join(state, p), 0o644)
	}
	os.Chmod(state, 0o755)
	rt2 := start(t, host.Config{Root: root, Isolation: "inprocess"})
	check("after a restart")
	rt2.Close()

	// agentos init: the root, tools/ and the files it writes.
	dir := filepath.Join(t.TempDir(), "fresh")
	if _, err := host.Init(dir, host.InitOptions{NoGit: true}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{"": 0o700, "tools": 0o700, host.ConfigFile: 0o600, host.RegistryFile: 0o600, ".gitignore": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("init: %s is %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
}

// The secrets section is checked at start: what is wrong and how to fix it.
func TestSecretsConfigValidation(t *testing.T) {
	for _, c := range []struct {
		s    host.SecretConfig
		want string
	}{
		{host.SecretConfig{Header: "Authorization", Allow: []string{"https://api.example.com/"}}, "env is required"},
		{host.SecretConfig{Env: "X", Allow: []string{"https://api.example.com/"}}, "exactly one of header"},
		{host.SecretConfig{Env: "X", Header: "A", Query: "k", Allow: []string{"https://api.example.com/"}}, "exactly one of header"},
		{host.SecretConfig{Env: "X", Header: "Authorization"}, "allow is required"},
		{host.SecretConfig{Env: "X", Header: "Authorization", Format: "Bearer", Allow: []string{"https://api.example.com/"}}, "must contain {}"},
		{host.SecretConfig{Env: "X", Header: "Authorization", Allow: []string{"http://api.example.com/"}}, "only over https"},
		{host.SecretConfig{Env: "X", Header: "Authorization", Allow: []string{"https://api.example.com/v1/../"}}, "ambiguous"},
	} {
		_, err := host.Start(context.Background(), host.Config{Root: t.TempDir(), Logger: quiet, Secrets: map[string]host.SecretConfig{"s": c.s}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.s, err, c.want)
		}
	}
	if _, err := host.Start(context.Background(), host.Config{Root: t.TempDir(), Logger: quiet, SecretPaths: []string{"../outside"}}); err == nil || !strings.Contains(err.Error(), "secret_paths") {
		t.Errorf("secret_paths outside the root: %v", err)
	}
	if _, err := host.Start(context.Background(), host.Config{Root: t.TempDir(), Logger: quiet, Fetch: host.FetchConfig{Allow: []string{"https://h/v1/%2e%2e/"}}}); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("an ambiguous fetch.allow prefix: %v", err)
	}
}

// A run whose arguments carried credentials is not resumed with
// [REDACTED] in their place: recovery marks it failed, saying why.
func TestRecoverRefusesRedactedArguments(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tools"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "login.ts"), []byte("/** Logs in. */\nexport default (a: { password: string }) => 'logged in with ' + a.password;\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Options{Root: root, Isolation: executor.IsolationInProcess})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	j, err := journal.Open(filepath.Join(root, "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, hash, err := ex.Source("tools/login.ts")
	if err != nil {
		t.Fatal(err)
	}
	run, err := j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/login.ts", Hash: hash, Args: json.RawMessage(`{"password":"hunter2-in-args"}`)})
	if err != nil {
		t.Fatal(err)
	}
	reports, err := executor.Recover(context.Background(), ex, j)
	if err != nil || len(reports) != 1 || reports[0].Resumed || !strings.Contains(reports[0].Reason, "credentials") {
		t.Fatalf("recover: %+v %v", reports, err)
	}
	if m, _ := j.Get(run.ID()); m.Status != journal.StatusFailed || !m.ArgsRedacted {
		t.Fatalf("run %+v", m)
	}
}

// agentos.json's secrets and secret_paths load; SecretValues finds every
// configured value in the environment, the PostgreSQL password included.
func TestSecretsConfigLoadsAndValues(t *testing.T) {
	root := t.TempDir()
	conf := `{
  "secrets": {"gh": {"env": "AGENTOS_TEST_GH", "header": "Authorization", "format": "token {}", "allow": ["https://api.github.com/"]}},
  "secret_paths": ["secrets.env", "keys/"],
  "llm": {"api_key_env": "AGENTOS_TEST_LLM"},
  "git": {"token_env": "AGENTOS_TEST_GIT"},
  "sql": {"postgres_dsn_env": "AGENTOS_TEST_DSN"}
}`
	if err := os.WriteFile(filepath.Join(root, host.ConfigFile), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := host.LoadConfig(root)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Secrets["gh"].Format != "token {}" || len(cfg.SecretPaths) != 2 {
		t.Fatalf("loaded %+v", cfg)
	}
	t.Setenv("AGENTOS_TEST_GH", "gh-value-1")
	t.Setenv("AGENTOS_TEST_LLM", "llm-value-2")
	t.Setenv("AGENTOS_TEST_GIT", "git-value-3")
	t.Setenv("AGENTOS_TEST_DSN", "postgres://agent:pg-pass-4@db.example/tools")
	got := strings.Join(cfg.SecretValues(), " ")
	for _, want := range []string{"gh-value-1", "token gh-value-1", "llm-value-2", "git-value-3", "pg-pass-4", "postgres://agent:pg-pass-4@db.example/tools"} {
		if !strings.Contains(got, want) {
			t.Errorf("SecretValues = %q, missing %q", got, want)
		}
	}
	t.Setenv("AGENTOS_TEST_DSN", "host=db user=agent password='kv-pass-5' dbname=tools")
	if got := cfg.SecretValues(); !slices.Contains(got, "kv-pass-5") {
		t.Errorf("key=value DSN: SecretValues = %q, want the bare password kv-pass-5 among them", got)
	}
}
