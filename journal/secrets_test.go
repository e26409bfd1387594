package journal

// Issue 10, item 7: secrets reached the journal. Each test greps the raw
// bbolt file for every secret after the run, and replays the run.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver"
)

// noSecretIn fails the test when any of secrets is in the file at path,
// after checking that the scan can see present, which is in the file.
func noSecretIn(t *testing.T, path string, present []string, secrets ...string) {
	t.Helper()
	raw := storedBytes(t, path)
	for _, p := range present {
		if !bytes.Contains(raw, []byte(p)) {
			t.Fatalf("the raw file does not contain %q: the scan would prove nothing", p)
		}
	}
	for _, s := range secrets {
		if i := bytes.Index(raw, []byte(s)); i >= 0 {
			t.Errorf("secret %q is in the journal file at offset %d", s, i)
		}
	}
}

func TestCredentialNames(t *testing.T) {
	both(t, func(t *testing.T) {
		for _, c := range []struct {
			name              string
			data, args, query bool
		}{
			{"Authorization", true, true, false},
			{"X-Auth-Token", true, true, true},
			{"Private-Token", true, true, true},
			{"X-Api-Key", true, true, true},
			{"apiKey", true, true, true},
			{"aws_secret_access_key", true, true, true},
			{"next_page_token", true, true, true},
			{"db_password", true, true, true},
			{"Cookie", true, true, false},
			{"set-cookie", true, true, false},
			{"credentials", true, true, true},
			{"bearer", true, true, true},
			{"X-Amz-Signature", true, true, true},
			{"key", false, true, true},
			{"sig", false, false, true},
			{"pass", false, true, false},
			// Not credentials: token counts, ordinary keys.
			{"prompt_tokens", false, false, false},
			{"max_tokens", false, false, false},
			{"sort_key", false, false, false},
			{"primary_key", false, false, false},
			{"keyword", false, false, false},
			{"path", false, false, false},
			{"auth", false, false, true}, // a secret binding's name in args, a credential in a URL
		} {
			if got := credentialName(c.name, nil, inData); got != c.data {
				t.Errorf("%q in data: %v, want %v", c.name, got, c.data)
			}
			if got := credentialName(c.name, nil, inArgs); got != c.args {
				t.Errorf("%q in args: %v, want %v", c.name, got, c.args)
			}
			if c.name != "Authorization" && c.name != "Cookie" && c.name != "set-cookie" {
				if got := credentialName(c.name, nil, inQuery); got != c.query {
					t.Errorf("%q in a query: %v, want %v", c.name, got, c.query)
				}
			}
		}
	})
}

// The headers and query parameters of the issue, unconfigured: a tool put
// them in its request itself. Before the fix X-Auth-Token, Private-Token,
// ?api_key= and the Authorization value echoed in a response body were all
// in the file.
func TestDefaultCredentialHeadersAndQuery(t *testing.T) {
	both(t, func(t *testing.T) {
		const (
			bearer  = "bearer-value-1111"
			xauth   = "xauth-value-2222"
			private = "private-value-3333"
			apiKey  = "apikey-value-4444"
			access  = "access-value-5555"
			userPW  = "userinfo-pw-6666"
			cookie  = "session=cookie-7777"
			visible = "visible-page-2"
		)
		j, path := openTemp(t, Options{Durability: SyncEach})
		req := `{"init":{"headers":{"Authorization":"Bearer ` + bearer + `","Cookie":"` + cookie + `","Private-Token":"` + private + `","X-Auth-Token":"` + xauth + `"}},` +
			`"url":"https://api.example.com/v1/items?page=` + visible + `&api_key=` + apiKey + `&access_token=` + access + `"}`
		// The server echoes what it received, as a debugging endpoint would.
		echo, _ := json.Marshal(map[string]any{"status": 200, "headers": map[string]string{}, "body": "you sent Authorization: Bearer " + bearer + ", X-Auth-Token: " + xauth + ", url ?api_key=" + apiKey})
		calls := []driver.Call{
			call(1, "fetch", "fetch", req),
			call(2, "fetch", "fetch", `{"url":"https://u:`+userPW+`@db.example.com/x"}`),
			// The tool passes the bearer on in a body (not a credential name).
			call(3, "fetch", "fetch", `{"init":{"body":"token was `+bearer+`"},"url":"https://api.example.com/v1/log"}`),
		}
		dev := &devices{answer: func(c driver.Call) (json.RawMessage, error) {
			if c.Seq == 1 {
				return echo, nil
			}
			return json.RawMessage(`{"status":204}`), nil
		}}
		run := mustBegin(t, j, RunMeta{ID: "headers", Kind: "exec"})
		h := run.Middleware()(dev.host())
		for _, c := range calls {
			if got, err := h.Do(context.Background(), c); err != nil || (c.Seq == 1 && !bytes.Equal(got, echo)) {
				t.Fatalf("%s: %s %v (the tool sees the real answer)", c, got, err)
			}
		}
		if err := run.End(StatusOK, json.RawMessage(`{"echo":"`+bearer+`","n":1}`), nil); err != nil {
			t.Fatal(err)
		}
		es := mustEntries(t, j, "headers")
		if !strings.Contains(string(es[0].Request), "page="+visible) || !strings.Contains(string(es[0].Request), "api_key=[REDACTED]") {
			t.Errorf("stored request %s: want page kept and api_key redacted", es[0].Request)
		}
		// Replay: the live requests carry the real values and do not diverge.
		p, err := j.Replayer("headers")
		if err != nil {
			t.Fatal(err)
		}
		rh := p.Middleware()(forbidden(t))
		for _, c := range calls {
			if _, err := rh.Do(context.Background(), c); err != nil {
				t.Errorf("replaying %s: %v", c, err)
			}
		}
		if d := p.Finish(); d != nil {
			t.Errorf("replay diverged: %v", d)
		}
		j.Close()
		noSecretIn(t, path, []string{visible, "[REDACTED]", "you sent Authorization"}, bearer, xauth, private, apiKey, access, userPW, cookie)
	})
}

// Arguments named key, bearer, password, credentials ... are redacted (only
// "token" was), and their values are scrubbed from the rest of the run: a
// SQL parameter, the result.
func TestCredentialArguments(t *testing.T) {
	both(t, func(t *testing.T) {
		const (
			key    = "arg-key-value-1"
			bearer = "arg-bearer-value-2"
			pw     = "arg-password-3"
			cred   = "arg-credentials-4"
			apiKey = "arg-apikey-value-5"
		)
		j, path := openTemp(t, Options{Durability: SyncEach})
		args := `{"apiKey":"` + apiKey + `","bearer":"` + bearer + `","credentials":{"user":"bob","secret":"` + cred + `"},"key":"` + key + `","password":"` + pw + `","q":"visible-q"}`
		run := mustBegin(t, j, RunMeta{ID: "args", Kind: "exec", Args: json.RawMessage(args)})
		h := run.Middleware()(echoDevices().host())
		c := call(1, "sql", "exec", `{"params":["`+pw+`","`+key+`"],"sql":"insert into users(pw, k) values (?, ?)"}`)
		if _, err := h.Do(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		if err := run.End(StatusOK, json.RawMessage(`"stored `+bearer+`"`), nil); err != nil {
			t.Fatal(err)
		}
		m, err := j.Get("args")
		if err != nil {
			t.Fatal(err)
		}
		if !m.ArgsRedacted || !strings.Contains(string(m.Args), `"q":"visible-q"`) {
			t.Errorf("stored args %s, ArgsRedacted %v", m.Args, m.ArgsRedacted)
		}
		if e := mustEntries(t, j, "args")[0]; string(e.Request) != `{"params":["[REDACTED]","[REDACTED]"],"sql":"insert into users(pw, k) values (?, ?)"}` {
			t.Errorf("stored request %s", e.Request)
		}
		j.Close()
		noSecretIn(t, path, []string{"visible-q", "insert into users"}, key, bearer, pw, cred, apiKey)
	})
}

// Configured secrets are scrubbed in every spelling: raw, URL-escaped,
// base64, and (the fast path reads bytes) JSON-escaped.
func TestConfiguredSecretSpellings(t *testing.T) {
	both(t, func(t *testing.T) {
		const secret = `s3cr3t "quoted" /+= value`
		j, path := openTemp(t, Options{Durability: SyncEach, Secrets: []string{secret}})
		inner := jsonInner(secret)
		b64 := base64.StdEncoding.EncodeToString([]byte(secret))
		reqs := []string{
			`{"a":"` + inner + `"}`, // canonical bytes: the fast path must not keep it
			`{"url":"https://x.example/?q=` + url.QueryEscape(secret) + `"}`,
			`{"h":"Basic ` + b64 + `"}`,
			`{"p":"/` + url.PathEscape(secret) + `"}`,
		}
		run := mustBegin(t, j, RunMeta{ID: "forms", Kind: "exec"})
		h := run.Middleware()(echoDevices().host())
		for i, r := range reqs {
			if _, err := h.Do(context.Background(), call(uint64(i+1), "fetch", "fetch", r)); err != nil {
				t.Fatal(err)
			}
		}
		if err := run.End(StatusOK, nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, e := range mustEntries(t, j, "forms") {
			if !strings.Contains(string(e.Request), Redacted) {
				t.Errorf("#%d stored %s: the secret is not scrubbed", e.Seq, e.Request)
			}
		}
		j.Close()
		noSecretIn(t, path, []string{"https://x.example"}, secret, inner, url.QueryEscape(secret), b64, url.PathEscape(secret))
	})
}

// A secret file's content is sealed: the journal keeps its hash, never its
// bytes, scrubs its values from the rest of the run, and replay reads the
// file again (failing clearly, [AGENTOS-J004], when it is gone or changed).
func TestSealedSecretFile(t *testing.T) {
	both(t, func(t *testing.T) {
		const (
			dbpw    = "sealed-db-password-1"
			apikey  = "sealed-api-key-2"
			content = "# prod\nDB_PASSWORD=" + dbpw + "\nAPI_KEY=\"" + apikey + "\"\n"
		)
		seal := func(c driver.Call) bool {
			return c.Driver == "fs" && strings.Contains(string(c.Request), "secrets.env")
		}
		j, path := openTemp(t, Options{Durability: SyncEach, Seal: seal})
		file := content
		files := &devices{answer: func(c driver.Call) (json.RawMessage, error) {
			if c.Driver == "fs" {
				if file == "" {
					return nil, driver.Errorf(driver.CodeNotFound, "no secrets.env")
				}
				b, _ := json.Marshal(file)
				return b, nil
			}
			return json.RawMessage(`{"status":200}`), nil
		}}
		calls := []driver.Call{
			call(1, "fs", "read_file", `{"path":"secrets.env"}`),
			call(2, "fetch", "fetch", `{"init":{"body":"k=`+apikey+`"},"url":"https://api.example.com/"}`),
			call(3, "fs", "write_file", `{"content":"`+dbpw+`","path":"/tmp/copy"}`),
		}
		run := mustBegin(t, j, RunMeta{ID: "sealed", Kind: "exec"})
		h := run.Middleware()(files.host())
		for _, c := range calls {
			got, err := h.Do(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if c.Seq == 1 && !strings.Contains(string(got), dbpw) {
				t.Fatalf("the tool must read the real file, got %s", got)
			}
		}
		if err := run.End(StatusOK, json.RawMessage(`"`+dbpw+`"`), nil); err != nil {
			t.Fatal(err)
		}
		es := mustEntries(t, j, "sealed")
		if es[0].Sealed == "" || string(es[0].Response) != `"[REDACTED]"` {
			t.Fatalf("the secret file's read is stored as %s (sealed %q)", es[0].Response, es[0].Sealed)
		}

		replay := func() (json.RawMessage, error) {
			p, err := j.Replayer("sealed")
			if err != nil {
				t.Fatal(err)
			}
			rh := p.Middleware()(files.host())
			var first json.RawMessage
			for _, c := range calls {
				got, err := rh.Do(context.Background(), c)
				if err != nil {
					return nil, err
				}
				if c.Seq == 1 {
					first = got
				}
			}
			if d := p.Finish(); d != nil {
				return nil, d
			}
			return first, nil
		}
		before := files.calls.Load()
		got, err := replay()
		if err != nil || !strings.Contains(string(got), dbpw) {
			t.Fatalf("replay with the file present: %s %v", got, err)
		}
		if n := files.calls.Load() - before; n != 1 {
			t.Errorf("replay touched the devices %d times, want 1 (the sealed read only)", n)
		}
		file = strings.Replace(content, dbpw, "rotated-password-9", 1)
		if _, err := replay(); err == nil || !strings.Contains(err.Error(), CodeSealed) || !strings.Contains(err.Error(), "changed since the run") {
			t.Errorf("replay with the file changed: %v, want %s", err, CodeSealed)
		}
		file = ""
		_, err = replay()
		if err == nil || !strings.Contains(err.Error(), CodeSealed) || !strings.Contains(err.Error(), "cannot be read now") {
			t.Errorf("replay with the file gone: %v, want %s", err, CodeSealed)
		}
		var de *driver.Error
		if !errors.As(err, &de) || de.Code != driver.CodeAbort {
			t.Errorf("a sealed read that cannot be answered aborts the run: %v", err)
		}
		j.Close()
		noSecretIn(t, path, []string{"secrets.env", "sha256:"}, dbpw, apikey, "DB_PASSWORD=")
	})
}

// An imported dump is redacted like a live recording.
func TestImportRedacts(t *testing.T) {
	both(t, func(t *testing.T) {
		const tok = "imported-token-value"
		j, path := openTemp(t, Options{})
		d := Dump{Run: RunMeta{ID: "imp", Kind: "exec", Status: StatusOK, Result: json.RawMessage(`{"token":"` + tok + `"}`)}, Entries: []Entry{
			{Seq: 1, Driver: "fetch", Op: "fetch", Request: json.RawMessage(`{"url":"https://x.example/?access_token=` + tok + `"}`), Response: json.RawMessage(`"echo ` + tok + `"`)},
		}}
		if err := j.Import(d); err != nil {
			t.Fatal(err)
		}
		j.Close()
		noSecretIn(t, path, []string{"x.example"}, tok)
	})
}
