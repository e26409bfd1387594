package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/testutil"
	"go.uber.org/goleak"

	"github.com/agentos-run/agentos/driver"
)

func TestMain(m *testing.M) {
	if os.Getenv("AGENTOS_PG_CRASH_CHILD") == "1" {
		pgCrashChild()
		return
	}
	// The package's PostgreSQL server (backend_test.go) stops after the
	// leak check: it is another process, not a goroutine.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		serverTB.stop()
		os.Exit(code)
	}))
}

// ---- helpers ---------------------------------------------------------------

// clock is a deterministic Options.Now: every reading is 1 ms after the last.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 11, 22, 20, 50, 12, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// Advance moves the clock on by d. The journal's writer reads the clock
// on its own goroutine, so a test MUST move it through here, never by
// writing c.t.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openAt opens (or reopens) the journal at path and closes it when the test ends.
func openAt(t testing.TB, path string, opts Options) *Journal {
	t.Helper()
	j, err := openStorage(t, path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// openTemp opens a new journal under t.TempDir() and returns it with its path.
func openTemp(t testing.TB, opts Options) (*Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	return openAt(t, path, opts), path
}

// devices is a counting host: the "devices" behind the middleware.
type devices struct {
	calls  atomic.Int64
	answer func(c driver.Call) (json.RawMessage, error)
}

func (d *devices) host() driver.Host {
	return driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
		d.calls.Add(1)
		return d.answer(c)
	})
}

// echoDevices answers every call with {"ok":seq}.
func echoDevices() *devices {
	return &devices{answer: func(c driver.Call) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"ok":%d}`, c.Seq)), nil
	}}
}

// forbidden is a host that fails the test when it is called.
func forbidden(t testing.TB) driver.Host {
	return driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
		t.Errorf("the wrapped host was called for %s; it must not be", c)
		return nil, errors.New("forbidden host called")
	})
}

func call(seq uint64, drv, op, req string) driver.Call {
	c := driver.Call{Seq: seq, Driver: drv, Op: op}
	if req != "" {
		c.Request = json.RawMessage(req)
	}
	return c
}

func mustBegin(t testing.TB, j *Journal, meta RunMeta) *Run {
	t.Helper()
	r, err := j.Begin(meta)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return r
}

func mustEntries(t testing.TB, j *Journal, id string) []Entry {
	t.Helper()
	es, err := j.Entries(id)
	if err != nil {
		t.Fatalf("Entries(%s): %v", id, err)
	}
	return es
}

func abortCode(t testing.TB, err error) *driver.Error {
	t.Helper()
	var de *driver.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *driver.Error", err, err)
	}
	return de
}

// ---- record ----------------------------------------------------------------

func TestRecordEntries(t *testing.T) {
	both(t, func(t *testing.T) {
		for _, dur := range []Durability{GroupCommit, SyncEach, NoSync, WriteEach} {
			t.Run(dur.String(), func(t *testing.T) {
				clk := newClock()
				j, _ := openTemp(t, Options{Durability: dur, Now: clk.Now})

				notFound := driver.Errorf(driver.CodeNotFound, "no file data/missing.json")
				plain := errors.New("disk on fire")
				dev := &devices{answer: func(c driver.Call) (json.RawMessage, error) {
					switch c.Seq {
					case 9:
						return nil, notFound
					case 10:
						return nil, plain
					}
					return json.RawMessage(fmt.Sprintf(`{"content": "file %d"}`, c.Seq)), nil
				}}
				run := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/orders.ts"})
				h := run.Middleware()(dev.host())

				// Issued out of order, with seqs whose decimal form sorts differently
				// (9 < 10) and that cross a byte boundary (255 < 256).
				cases := []struct {
					c       driver.Call
					wantErr error
				}{
					{call(256, "clock", "now", ""), nil},
					{call(2, "fs", "read_file", `{"path":"b.json"}`), nil},
					{call(10, "fs", "write_file", `{"path":"c.json","content":"x"}`), plain},
					{call(1, "fs", "read_file", `{"path":"a.json"}`), nil},
					{call(255, "random", "bytes", `{"n":16}`), nil},
					{call(9, "fs", "read_file", `{"path":"data/missing.json"}`), notFound},
				}
				for _, tc := range cases {
					got, err := h.Do(context.Background(), tc.c)
					if err != tc.wantErr {
						t.Fatalf("%s: error = %v (%T), want the device's error %v unchanged", tc.c, err, err, tc.wantErr)
					}
					if tc.wantErr == nil {
						// The caller sees the device's bytes as they were, not re-encoded.
						if want := fmt.Sprintf(`{"content": "file %d"}`, tc.c.Seq); string(got) != want {
							t.Fatalf("%s: response = %s, want %s", tc.c, got, want)
						}
					} else if got != nil {
						t.Fatalf("%s: response = %s with an error", tc.c, got)
					}
				}
				if n := dev.calls.Load(); n != int64(len(cases)) {
					t.Fatalf("devices called %d times, want %d", n, len(cases))
				}
				if err := run.End(StatusOK, json.RawMessage(`{"total": 3}`), nil); err != nil {
					t.Fatal(err)
				}

				es := mustEntries(t, j, run.ID())
				want := []struct {
					seq      uint64
					drv, op  string
					req      string
					resp     string
					errCode  string
					errMatch string
				}{
					{1, "fs", "read_file", `{"path":"a.json"}`, `{"content":"file 1"}`, "", ""},
					{2, "fs", "read_file", `{"path":"b.json"}`, `{"content":"file 2"}`, "", ""},
					{9, "fs", "read_file", `{"path":"data/missing.json"}`, "", driver.CodeNotFound, "no file data/missing.json"},
					{10, "fs", "write_file", `{"content":"x","path":"c.json"}`, "", driver.CodeIO, "disk on fire"},
					{255, "random", "bytes", `{"n":16}`, `{"content":"file 255"}`, "", ""},
					{256, "clock", "now", "", `{"content":"file 256"}`, "", ""},
				}
				if len(es) != len(want) {
					t.Fatalf("Entries returned %d entries, want %d: %+v", len(es), len(want), es)
				}
				for i, w := range want {
					e := es[i]
					if e.Seq != w.seq || e.Driver != w.drv || e.Op != w.op || string(e.Request) != w.req || string(e.Response) != w.resp {
						t.Errorf("entry %d = {seq %d %s.%s req %s resp %s}, want {seq %d %s.%s req %s resp %s}",
							i, e.Seq, e.Driver, e.Op, e.Request, e.Response, w.seq, w.drv, w.op, w.req, w.resp)
					}
					switch {
					case w.errCode == "" && e.Error != nil:
						t.Errorf("entry %d: unexpected error %+v", i, e.Error)
					case w.errCode != "" && e.Error == nil:
						t.Errorf("entry %d: error not recorded", i)
					case w.errCode != "" && (e.Error.Code != w.errCode || e.Error.Message != w.errMatch):
						t.Errorf("entry %d: error = %+v, want code %s message %q", i, e.Error, w.errCode, w.errMatch)
					}
					if e.At.IsZero() || e.Duration <= 0 {
						t.Errorf("entry %d: At %v, Duration %v: want both set from Options.Now", i, e.At, e.Duration)
					}
				}
			})
		}
	})
}

func TestBeginFillsMeta(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := newClock()
		j, _ := openTemp(t, Options{Now: clk.Now})
		run := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/x.ts", Status: StatusOK})
		m := run.Meta()
		if !regexp.MustCompile(`^20261122-205012\.001-[0-9a-f]{6}$`).MatchString(m.ID) {
			t.Errorf("generated id %q does not look like 20261122-205012.001-xxxxxx", m.ID)
		}
		if m.Status != StatusRunning || m.Started.IsZero() || !m.Ended.IsZero() || m.Duration() != 0 {
			t.Errorf("meta after Begin = %+v, want status running, started set, not ended", m)
		}
		got, err := j.Get(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusRunning || got.Tool != "tools/x.ts" || !got.Started.Equal(m.Started) {
			t.Errorf("stored meta = %+v, want %+v", got, m)
		}
		if err := run.End(StatusFailed, nil, json.RawMessage(`{"message":"boom"}`)); err != nil {
			t.Fatal(err)
		}
		got, _ = j.Get(m.ID)
		if got.Status != StatusFailed || string(got.Error) != `{"message":"boom"}` || got.Duration() <= 0 {
			t.Errorf("stored meta after End = %+v", got)
		}
	})
}

func TestRunsGetUnfinishedMarkFailed(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := newClock()
		j, _ := openTemp(t, Options{Now: clk.Now})
		// Started in this order; ids sort differently.
		ids := []string{"run-c", "run-aaa1", "run-aaa2", "r1", "r10"}
		runs := map[string]*Run{}
		for _, id := range ids {
			runs[id] = mustBegin(t, j, RunMeta{ID: id, Kind: "exec"})
		}
		for _, id := range []string{"run-aaa2", "r10"} {
			if err := runs[id].End(StatusOK, nil, nil); err != nil {
				t.Fatal(err)
			}
		}

		all, err := j.Runs()
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, m := range all {
			order = append(order, m.ID)
		}
		if strings.Join(order, " ") != strings.Join(ids, " ") {
			t.Errorf("Runs order = %v, want oldest first %v", order, ids)
		}

		for _, tc := range []struct {
			id      string
			want    string
			wantErr error
		}{
			{"run-c", "run-c", nil},       // exact
			{"run-aaa1", "run-aaa1", nil}, // exact
			{"run-aaa", "", ErrAmbiguous}, // two runs
			{"run-aaa2", "run-aaa2", nil}, // exact, next to an ambiguous prefix
			{"run-aa", "", ErrAmbiguous},  // two runs
			{"run-b", "", ErrNoRun},       // between keys
			{"run-", "", ErrAmbiguous},    // three runs
			{"run-aaa", "", ErrAmbiguous}, // two runs
			{"r1", "r1", nil},             // exact id that is also a prefix of r10
			{"r10", "r10", nil},           // exact
			{"run-a", "", ErrAmbiguous},   // two runs
			{"run-aaa3", "", ErrNoRun},    // nothing
			{"run-aaa10", "", ErrNoRun},   // longer than any id
			{"zzz", "", ErrNoRun},         // after every key
			{"", "", ErrNoRun},            // empty id is no run, not "all"
			{"run-c-x", "", ErrNoRun},     // an id extended
			{"run-", "", ErrAmbiguous},
			{"run-c", "run-c", nil},
			{"run", "", ErrAmbiguous},
			{"r", "", ErrAmbiguous},
		} {
			m, err := j.Get(tc.id)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("Get(%q) error = %v, want %v", tc.id, err, tc.wantErr)
				}
				continue
			}
			if err != nil || m.ID != tc.want {
				t.Errorf("Get(%q) = %q, %v; want %q", tc.id, m.ID, err, tc.want)
			}
		}
		if _, err := j.Get("run-"); err == nil || !strings.Contains(err.Error(), "run-aaa1") {
			t.Errorf("ambiguous error %v should name a match", err)
		}

		unf, err := j.Unfinished()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range unf {
			names = append(names, m.ID)
		}
		if got := strings.Join(names, " "); got != "run-c run-aaa1 r1" {
			t.Errorf("Unfinished = %q, want %q", got, "run-c run-aaa1 r1")
		}

		if err := j.MarkFailed("run-aaa1", "the tool source changed; cannot resume"); err != nil {
			t.Fatal(err)
		}
		m, err := j.Get("run-aaa1")
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != StatusFailed || m.Reason != "the tool source changed; cannot resume" || m.Ended.IsZero() {
			t.Errorf("after MarkFailed: %+v", m)
		}
		if err := j.MarkFailed("run-c", "gone"); err != nil {
			t.Fatal(err)
		}
		unf, _ = j.Unfinished()
		if len(unf) != 1 || unf[0].ID != "r1" {
			t.Errorf("Unfinished after MarkFailed = %+v, want only r1", unf)
		}
		if err := j.MarkFailed("nope", "x"); !errors.Is(err, ErrNoRun) {
			t.Errorf("MarkFailed(unknown) = %v, want ErrNoRun", err)
		}
		if err := j.MarkFailed("run-", "x"); !errors.Is(err, ErrAmbiguous) {
			t.Errorf("MarkFailed(ambiguous) = %v, want ErrAmbiguous", err)
		}
		if es := mustEntries(t, j, "no-such-run"); len(es) != 0 {
			t.Errorf("Entries(unknown) = %v, want none", es)
		}
	})
}

// ---- canonical requests ------------------------------------------------------

func TestCanonicalRequests(t *testing.T) {
	both(t, func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			variants []string // all stored as want
			want     string
		}{
			{"key order", []string{`{"b":1,"a":2}`, `{"a":2, "b":1}`, "{\n\t\"a\": 2,\n\t\"b\": 1\n}"}, `{"a":2,"b":1}`},
			{"nested", []string{`{"z":{"y":[{"b":true,"a":null}],"x":"s"},"a":[]}`, `{ "a" : [ ] , "z" : { "x" : "s" , "y" : [ { "a" : null , "b" : true } ] } }`}, `{"a":[],"z":{"x":"s","y":[{"a":null,"b":true}]}}`},
			{"numbers as written", []string{`{"big":12345678901234567890,"f":1.50}`, `{"f":1.50,"big":12345678901234567890}`}, `{"big":12345678901234567890,"f":1.50}`},
			{"escapes", []string{`{"q":"caf\u00e9 \"x\"\n"}`, `{"q":"café \"x\"\u000a"}`}, `{"q":"café \"x\"\n"}`},
			{"top-level array", []string{`[3, 2,1]`, `[3,2,1]`}, `[3,2,1]`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				j, _ := openTemp(t, Options{Durability: NoSync})
				run := mustBegin(t, j, RunMeta{Kind: "exec"})
				h := run.Middleware()(echoDevices().host())
				for i, v := range tc.variants {
					if _, err := h.Do(context.Background(), call(uint64(i+1), "sql", "query", v)); err != nil {
						t.Fatal(err)
					}
				}
				if err := run.End(StatusOK, nil, nil); err != nil {
					t.Fatal(err)
				}
				es := mustEntries(t, j, run.ID())
				if len(es) != len(tc.variants) {
					t.Fatalf("%d entries, want %d", len(es), len(tc.variants))
				}
				for i, e := range es {
					if string(e.Request) != tc.want {
						t.Errorf("variant %d %s stored as %s, want %s", i, tc.variants[i], e.Request, tc.want)
					}
				}

				// Replay each recorded call with its request written another way.
				p, err := j.Replayer(run.ID())
				if err != nil {
					t.Fatal(err)
				}
				rh := p.Middleware()(forbidden(t))
				for i := range tc.variants {
					other := tc.variants[(i+1)%len(tc.variants)]
					got, err := rh.Do(context.Background(), call(uint64(i+1), "sql", "query", other))
					if err != nil {
						t.Fatalf("replaying #%d with %s: %v", i+1, other, err)
					}
					if want := fmt.Sprintf(`{"ok":%d}`, i+1); string(got) != want {
						t.Errorf("replayed #%d = %s, want %s", i+1, got, want)
					}
				}
				if d := p.Finish(); d != nil {
					t.Errorf("Finish = %v, want no divergence", d)
				}
			})
		}
	})
}

// ---- redaction ---------------------------------------------------------------

func TestRedaction(t *testing.T) {
	both(t, func(t *testing.T) {
		const (
			bearer    = "sk-123-bearer-XYZ"
			password  = "hunter2-pw-QQQ"
			literal   = "LITERAL-s3cr3t-987"
			custom    = "custom-session-ABC"
			arrayTok  = "tok-in-array-555"
			upperAuth = "upper-auth-777"
			visible   = "visible-marker-4242"
		)
		clk := newClock()
		j, path := openTemp(t, Options{Durability: SyncEach, Now: clk.Now, Redact: []string{"X-Session"}})
		j.AddSecret(literal)
		j.AddSecret("abc") // too short: ignored, must not mangle ordinary text

		type step struct {
			c        driver.Call
			resp     string // device response ("" = error)
			devErr   error
			wantReq  string // stored request
			wantResp string // stored response
			wantErr  string // stored error message
		}
		steps := []step{
			{
				c:        call(1, "fetch", "get", `{"headers":{"Authorization":"Bearer `+bearer+`"},"url":"x"}`),
				resp:     `{"status":200,"body":"` + visible + ` abc"}`,
				wantReq:  `{"headers":{"Authorization":"[REDACTED]"},"url":"x"}`,
				wantResp: `{"body":"` + visible + ` abc","status":200}`,
			},
			{
				c:        call(2, "sql", "query", `{"q":"select 1 where k='`+literal+`' -- in a longer string"}`),
				resp:     `{"rows":[{"user":"bob","password":"` + password + `"}]}`,
				wantReq:  `{"q":"select 1 where k='[REDACTED]' -- in a longer string"}`,
				wantResp: `{"rows":[{"password":"[REDACTED]","user":"bob"}]}`,
			},
			{
				c:       call(3, "sql", "connect", `{"dsn":"postgres://u:`+password+`@db"}`),
				devErr:  driver.Errorf(driver.CodeIO, "cannot connect with key %s: refused", literal),
				wantReq: `{"dsn":"[REDACTED]"}`,
				wantErr: "cannot connect with key [REDACTED]: refused",
			},
			{
				c:        call(4, "fetch", "get", `{"x-session":"`+custom+`","items":[{"token":"`+arrayTok+`"}],"AUTHORIZATION":"`+upperAuth+`"}`),
				resp:     `"` + literal + literal + `"`,
				wantReq:  `{"AUTHORIZATION":"[REDACTED]","items":[{"token":"[REDACTED]"}],"x-session":"[REDACTED]"}`,
				wantResp: `"[REDACTED][REDACTED]"`,
			},
			{
				c:       call(5, "fetch", "get", `{"url":"y"}`),
				devErr:  errors.New("upstream said: " + literal),
				wantReq: `{"url":"y"}`,
				wantErr: "upstream said: [REDACTED]",
			},
		}
		dev := &devices{answer: func(c driver.Call) (json.RawMessage, error) {
			s := steps[c.Seq-1]
			if s.devErr != nil {
				return nil, s.devErr
			}
			return json.RawMessage(s.resp), nil
		}}
		run := mustBegin(t, j, RunMeta{ID: "redact-run", Kind: "exec"})
		h := run.Middleware()(dev.host())
		for _, s := range steps {
			got, err := h.Do(context.Background(), s.c)
			// The tool sees the real values: redaction is for the file only.
			if s.devErr != nil {
				if err != s.devErr {
					t.Fatalf("%s: error %v, want the device's error unchanged", s.c, err)
				}
			} else if err != nil || string(got) != s.resp {
				t.Fatalf("%s: got %s, %v; want the device's response %s", s.c, got, err, s.resp)
			}
		}
		if err := run.End(StatusOK, json.RawMessage(`{"token":"`+arrayTok+`","note":"`+literal+`"}`), nil); err != nil {
			t.Fatal(err)
		}

		es := mustEntries(t, j, run.ID())
		if len(es) != len(steps) {
			t.Fatalf("%d entries, want %d", len(es), len(steps))
		}
		for i, s := range steps {
			e := es[i]
			if string(e.Request) != s.wantReq {
				t.Errorf("#%d stored request %s, want %s", e.Seq, e.Request, s.wantReq)
			}
			if string(e.Response) != s.wantResp {
				t.Errorf("#%d stored response %s, want %s", e.Seq, e.Response, s.wantResp)
			}
			if s.wantErr != "" && (e.Error == nil || e.Error.Message != s.wantErr) {
				t.Errorf("#%d stored error %+v, want message %q", e.Seq, e.Error, s.wantErr)
			}
		}
		m, _ := j.Get(run.ID())
		if string(m.Result) != `{"note":"[REDACTED]","token":"[REDACTED]"}` {
			t.Errorf("stored result %s", m.Result)
		}

		// The redacted run replays: the live requests, real secrets and all, do
		// not diverge; the answers are the redacted recordings.
		replay := func(j *Journal) {
			t.Helper()
			p, err := j.Replayer("redact")
			if err != nil {
				t.Fatal(err)
			}
			rh := p.Middleware()(forbidden(t))
			for i, s := range steps {
				got, err := rh.Do(context.Background(), s.c)
				if s.wantErr != "" {
					if de := abortCode(t, err); de.Message != s.wantErr || de.Code == driver.CodeAbort {
						t.Errorf("replayed #%d error %+v, want recorded error %q", i+1, de, s.wantErr)
					}
					continue
				}
				if err != nil || string(got) != s.wantResp {
					t.Errorf("replayed #%d = %s, %v; want %s", i+1, got, err, s.wantResp)
				}
			}
			if d := p.Finish(); d != nil {
				t.Errorf("replay of the redacted run diverged: %v", d)
			}
		}
		replay(j)

		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		raw := storedBytes(t, path)
		// The scan can see what is in the file...
		for _, present := range []string{visible, "[REDACTED]", "redact-run"} {
			if !bytes.Contains(raw, []byte(present)) {
				t.Fatalf("the raw file does not contain %q: the scan below would prove nothing", present)
			}
		}
		// ...and no secret is.
		for _, secret := range []string{bearer, password, literal, custom, arrayTok, upperAuth} {
			if i := bytes.Index(raw, []byte(secret)); i >= 0 {
				t.Errorf("secret %q found in the journal file at offset %d", secret, i)
			}
		}

		// After a restart the drivers register their secrets again; the run still replays.
		j2 := openAt(t, path, Options{Redact: []string{"x-session"}})
		j2.AddSecret(literal)
		replay(j2)
	})
}

// ---- replay ------------------------------------------------------------------

// recordThree records #1 fs.read_file a.json, #2 fs.read_file b.json (an
// error), #3 clock.now and ends the run.
func recordThree(t *testing.T, j *Journal, id string) {
	t.Helper()
	dev := &devices{answer: func(c driver.Call) (json.RawMessage, error) {
		switch c.Seq {
		case 2:
			return nil, driver.Errorf(driver.CodeNotFound, "no b.json")
		case 3:
			return json.RawMessage(`{"unix_ms":1700000000000}`), nil
		}
		return json.RawMessage(`{"content":"A"}`), nil
	}}
	run := mustBegin(t, j, RunMeta{ID: id, Kind: "exec"})
	h := run.Middleware()(dev.host())
	for _, c := range threeCalls() {
		h.Do(context.Background(), c)
	}
	if err := run.End(StatusOK, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func threeCalls() []driver.Call {
	return []driver.Call{
		call(1, "fs", "read_file", `{"path":"a.json"}`),
		call(2, "fs", "read_file", `{"path":"b.json"}`),
		call(3, "clock", "now", ""),
	}
}

func TestReplayerServesRecording(t *testing.T) {
	both(t, func(t *testing.T) {
		j, _ := openTemp(t, Options{})
		recordThree(t, j, "rep-1")
		p, err := j.Replayer("rep-")
		if err != nil {
			t.Fatal(err)
		}
		if p.Meta().ID != "rep-1" || p.Meta().Status != StatusOK {
			t.Errorf("Meta = %+v", p.Meta())
		}
		h := p.Middleware()(forbidden(t))
		cs := threeCalls()
		got, err := h.Do(context.Background(), cs[0])
		if err != nil || string(got) != `{"content":"A"}` {
			t.Errorf("#1 = %s, %v", got, err)
		}
		_, err = h.Do(context.Background(), cs[1])
		if de := abortCode(t, err); de.Code != driver.CodeNotFound || de.Message != "no b.json" {
			t.Errorf("#2 error = %+v, want the recorded not_found error", de)
		}
		got, err = h.Do(context.Background(), cs[2])
		if err != nil || string(got) != `{"unix_ms":1700000000000}` {
			t.Errorf("#3 = %s, %v", got, err)
		}
		if d := p.Finish(); d != nil {
			t.Errorf("Finish = %v", d)
		}
		if _, err := j.Replayer("nope"); !errors.Is(err, ErrNoRun) {
			t.Errorf("Replayer(unknown) = %v, want ErrNoRun", err)
		}
	})
}

func TestReplayerDivergence(t *testing.T) {
	both(t, func(t *testing.T) {
		j, _ := openTemp(t, Options{})
		recordThree(t, j, "div-run")
		a := threeCalls()
		for _, tc := range []struct {
			name     string
			calls    []driver.Call
			failAt   int // index of the call that must abort; -1 for none
			code     string
			seq      uint64
			expected string
			actual   string
		}{
			{
				name:     "J001 request differs",
				calls:    []driver.Call{a[0], call(2, "fs", "read_file", `{"path":"c.json"}`)},
				failAt:   1,
				code:     CodeRequestDiffers,
				seq:      2,
				expected: `fs.read_file {"path":"b.json"}`,
				actual:   `fs.read_file {"path":"c.json"}`,
			},
			{
				name:     "J001 op differs",
				calls:    []driver.Call{call(1, "fs", "write_file", `{"path":"a.json"}`)},
				failAt:   0,
				code:     CodeRequestDiffers,
				seq:      1,
				expected: `fs.read_file {"path":"a.json"}`,
				actual:   `fs.write_file {"path":"a.json"}`,
			},
			{
				name:     "J001 driver differs",
				calls:    []driver.Call{a[0], a[1], call(3, "random", "now", "")},
				failAt:   2,
				code:     CodeRequestDiffers,
				seq:      3,
				expected: `clock.now `,
				actual:   `random.now `,
			},
			{
				name:   "J002 beyond the end",
				calls:  []driver.Call{a[0], a[1], a[2], call(4, "fs", "read_file", `{"b":1, "a":2}`)},
				failAt: 3,
				code:   CodeBeyondEnd,
				seq:    4,
				actual: `fs.read_file {"a":2,"b":1}`,
			},
			{
				name:     "J003 fewer calls",
				calls:    []driver.Call{a[0]},
				failAt:   -1,
				code:     CodeUnconsumed,
				seq:      2,
				expected: `fs.read_file {"path":"b.json"}`,
			},
			{
				name:     "first divergence wins",
				calls:    []driver.Call{call(1, "fs", "read_file", `{"path":"z"}`), a[1], a[2], call(9, "x", "y", "")},
				failAt:   0,
				code:     CodeRequestDiffers,
				seq:      1,
				expected: `fs.read_file {"path":"a.json"}`,
				actual:   `fs.read_file {"path":"z"}`,
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p, err := j.Replayer("div-run")
				if err != nil {
					t.Fatal(err)
				}
				h := p.Middleware()(forbidden(t))
				for i, c := range tc.calls {
					_, err := h.Do(context.Background(), c)
					if i < tc.failAt || tc.failAt < 0 {
						if err != nil && abortCode(t, err).Code == driver.CodeAbort {
							t.Fatalf("call %s aborted: %v", c, err)
						}
						continue
					}
					if i > tc.failAt {
						continue // after the first divergence, anything goes
					}
					de := abortCode(t, err)
					if de.Code != driver.CodeAbort {
						t.Fatalf("call %s: code %q, want %q", c, de.Code, driver.CodeAbort)
					}
					if !strings.Contains(de.Message, "["+tc.code+"]") || !strings.Contains(de.Message, "div-run") {
						t.Errorf("abort message %q should carry [%s] and the run id", de.Message, tc.code)
					}
				}
				d := p.Finish()
				if d == nil {
					t.Fatal("Finish = nil, want a divergence")
				}
				if d.Code != tc.code || d.Seq != tc.seq || d.RunID != "div-run" || d.Expected != tc.expected || d.Actual != tc.actual {
					t.Errorf("Finish = %#v,\nwant code %s seq %d expected %q actual %q", d, tc.code, tc.seq, tc.expected, tc.actual)
				}
				if !strings.HasPrefix(d.Error(), "["+tc.code+"]") {
					t.Errorf("Error() = %q", d.Error())
				}
				if d2 := p.Finish(); d2 != d {
					t.Errorf("Finish is not stable: %v then %v", d, d2)
				}
			})
		}
	})
}

// ---- recovery ----------------------------------------------------------------

func TestRecover(t *testing.T) {
	both(t, func(t *testing.T) {
		for _, dur := range []Durability{GroupCommit, SyncEach} {
			t.Run(dur.String(), func(t *testing.T) {
				clk := newClock()
				path := filepath.Join(t.TempDir(), "journal.db")
				j := openAt(t, path, Options{Durability: dur, Now: clk.Now})
				resp := func(c driver.Call) (json.RawMessage, error) {
					return json.RawMessage(fmt.Sprintf(`{"n":%d}`, c.Seq)), nil
				}
				calls := make([]driver.Call, 5)
				for i := range calls {
					calls[i] = call(uint64(i+1), "fetch", "get", fmt.Sprintf(`{"url":"https://x/%d"}`, i+1))
				}
				run := mustBegin(t, j, RunMeta{ID: "crashed", Kind: "exec"})
				first := &devices{answer: resp}
				h := run.Middleware()(first.host())
				for _, c := range calls[:3] {
					if _, err := h.Do(context.Background(), c); err != nil {
						t.Fatal(err)
					}
				}
				// The process "dies": no End. Reopen.
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
				j = openAt(t, path, Options{Durability: dur, Now: clk.Now})
				unf, err := j.Unfinished()
				if err != nil || len(unf) != 1 || unf[0].ID != "crashed" {
					t.Fatalf("Unfinished = %+v, %v", unf, err)
				}

				rec, err := j.Recover("crash")
				if err != nil {
					t.Fatal(err)
				}
				second := &devices{answer: resp}
				rh := rec.Middleware()(second.host())
				for i, c := range calls {
					got, err := rh.Do(context.Background(), c)
					if err != nil {
						t.Fatalf("%s: %v", c, err)
					}
					if want := fmt.Sprintf(`{"n":%d}`, i+1); string(got) != want {
						t.Errorf("%s = %s, want %s", c, got, want)
					}
					wantCalls := int64(max(0, i-2))
					if n := second.calls.Load(); n != wantCalls {
						t.Fatalf("after %s the devices were called %d times, want %d (1..3 come from the journal)", c, n, wantCalls)
					}
				}
				if err := rec.Run().End(StatusOK, nil, nil); err != nil {
					t.Fatal(err)
				}
				es := mustEntries(t, j, "crashed")
				if len(es) != 5 {
					t.Fatalf("%d entries after recovery, want 5", len(es))
				}
				for i, e := range es {
					if e.Seq != uint64(i+1) || string(e.Request) != string(calls[i].Request) || string(e.Response) != fmt.Sprintf(`{"n":%d}`, i+1) {
						t.Errorf("entry %d = %+v", i, e)
					}
				}
				m, _ := j.Get("crashed")
				if m.Status != StatusOK || m.Ended.IsZero() {
					t.Errorf("after End: %+v", m)
				}
				if unf, _ := j.Unfinished(); len(unf) != 0 {
					t.Errorf("Unfinished after recovery = %+v", unf)
				}

				// An ended run is not recovered again (issue 24); replayed,
				// its prefix still has to match: a different request aborts.
				if _, err := j.Recover("crashed"); !errors.Is(err, ErrEnded) {
					t.Fatalf("Recover of the ended run: %v, want ErrEnded", err)
				}
				rep, err := j.Replayer("crashed")
				if err != nil {
					t.Fatal(err)
				}
				_, err = rep.Middleware()(forbidden(t)).Do(context.Background(), call(2, "fetch", "get", `{"url":"https://x/other"}`))
				if de := abortCode(t, err); de.Code != driver.CodeAbort || !strings.Contains(de.Message, CodeRequestDiffers) {
					t.Errorf("diverging recovered call: %+v", de)
				}
			})
		}
	})
}

// ---- durability --------------------------------------------------------------

func TestDurability(t *testing.T) {
	both(t, func(t *testing.T) {
		const n = 1000
		for _, dur := range []Durability{SyncEach, GroupCommit, NoSync} {
			t.Run(dur.String(), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "journal.db")
				j := openAt(t, path, Options{Durability: dur, MaxBatch: 64})
				run := mustBegin(t, j, RunMeta{ID: "durable", Kind: "exec"})
				h := run.Middleware()(echoDevices().host())
				var next atomic.Uint64
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						for {
							seq := next.Add(1)
							if seq > n {
								return
							}
							if _, err := h.Do(context.Background(), call(seq, "fs", "read_file", fmt.Sprintf(`{"path":"f%d"}`, seq))); err != nil {
								t.Errorf("#%d: %v", seq, err)
								return
							}
						}
					})
				}
				wg.Wait()
				// No End: Close alone must commit what is queued.
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
				j = openAt(t, path, Options{Durability: dur})
				es := mustEntries(t, j, "durable")
				if len(es) != n {
					t.Fatalf("%d entries after reopening, want %d", len(es), n)
				}
				for i, e := range es {
					if e.Seq != uint64(i+1) || string(e.Response) != fmt.Sprintf(`{"ok":%d}`, i+1) {
						t.Fatalf("entry %d = seq %d resp %s", i, e.Seq, e.Response)
					}
				}
				if err := j.Check(); err != nil {
					t.Fatalf("Check: %v", err)
				}
			})
		}
	})
}

// TestSyncEachCommittedBeforeReturn: under SyncEach an entry is committed
// before Do returns, so Entries right after it sees it.
func TestSyncEachCommittedBeforeReturn(t *testing.T) {
	both(t, func(t *testing.T) {
		j, _ := openTemp(t, Options{Durability: SyncEach})
		run := mustBegin(t, j, RunMeta{Kind: "exec"})
		h := run.Middleware()(echoDevices().host())
		for seq := uint64(1); seq <= 100; seq++ {
			if _, err := h.Do(context.Background(), call(seq, "clock", "now", "")); err != nil {
				t.Fatal(err)
			}
			es := mustEntries(t, j, run.ID())
			if len(es) != int(seq) || es[seq-1].Seq != seq {
				t.Fatalf("right after #%d returned, Entries has %d entries: the write was not committed before returning", seq, len(es))
			}
		}
	})
}

// TestCloseCommitsQueue: Close commits every queued entry before closing
// the file, even with a long queue behind a slow (fsyncing) writer.
func TestCloseCommitsQueue(t *testing.T) {
	both(t, func(t *testing.T) {
		const n = 20000
		for _, dur := range []Durability{GroupCommit, NoSync} {
			t.Run(dur.String(), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "journal.db")
				j := openAt(t, path, Options{Durability: dur})
				run := mustBegin(t, j, RunMeta{ID: "queued", Kind: "exec"})
				h := run.Middleware()(echoDevices().host())
				var next atomic.Uint64
				var wg sync.WaitGroup
				for range 4 { // outpace the writer so that the queue is long at Close
					wg.Go(func() {
						for seq := next.Add(1); seq <= n; seq = next.Add(1) {
							if _, err := h.Do(context.Background(), call(seq, "fs", "read_file", `{"path":"data/orders.json"}`)); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
				j = openAt(t, path, Options{})
				if es := mustEntries(t, j, "queued"); len(es) != n {
					t.Fatalf("%d entries after Close, want %d", len(es), n)
				}
			})
		}
	})
}

// TestEndCommitsQueuedEntries: under GroupCommit, End returns only after
// every entry queued before it is committed.
func TestEndCommitsQueuedEntries(t *testing.T) {
	both(t, func(t *testing.T) {
		for _, dur := range []Durability{GroupCommit, NoSync} {
			t.Run(dur.String(), func(t *testing.T) {
				j, _ := openTemp(t, Options{Durability: dur})
				for r := range 5 {
					run := mustBegin(t, j, RunMeta{ID: fmt.Sprintf("r%d", r), Kind: "exec"})
					h := run.Middleware()(echoDevices().host())
					for seq := uint64(1); seq <= 300; seq++ {
						if _, err := h.Do(context.Background(), call(seq, "clock", "now", "")); err != nil {
							t.Fatal(err)
						}
					}
					if err := run.End(StatusOK, nil, nil); err != nil {
						t.Fatal(err)
					}
					if es := mustEntries(t, j, run.ID()); len(es) != 300 {
						t.Fatalf("run %d: %d entries right after End, want 300", r, len(es))
					}
				}
			})
		}
	})
}

// TestConcurrentCalls records many calls of one run at once and replays them
// at once (run with -race).
func TestConcurrentCalls(t *testing.T) {
	both(t, func(t *testing.T) {
		j, _ := openTemp(t, Options{Durability: NoSync})
		run := mustBegin(t, j, RunMeta{ID: "conc", Kind: "exec"})
		h := run.Middleware()(echoDevices().host())
		const workers, per = 8, 100
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range per {
					seq := uint64(w*per + i + 1)
					got, err := h.Do(context.Background(), call(seq, "fs", "stat", fmt.Sprintf(`{"i":%d}`, seq)))
					if err != nil || string(got) != fmt.Sprintf(`{"ok":%d}`, seq) {
						t.Errorf("#%d = %s, %v", seq, got, err)
					}
				}
			})
		}
		wg.Wait()
		if err := run.End(StatusOK, nil, nil); err != nil {
			t.Fatal(err)
		}
		p, err := j.Replayer("conc")
		if err != nil {
			t.Fatal(err)
		}
		rh := p.Middleware()(forbidden(t))
		for w := range workers {
			wg.Go(func() {
				for i := range per {
					seq := uint64(w*per + i + 1)
					got, err := rh.Do(context.Background(), call(seq, "fs", "stat", fmt.Sprintf(`{"i":%d}`, seq)))
					if err != nil || string(got) != fmt.Sprintf(`{"ok":%d}`, seq) {
						t.Errorf("replay #%d = %s, %v", seq, got, err)
					}
				}
			})
		}
		wg.Wait()
		if d := p.Finish(); d != nil {
			t.Errorf("Finish = %v", d)
		}
	})
}

// ---- export / import -------------------------------------------------------

func TestExportImport(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := newClock()
		j, _ := openTemp(t, Options{Now: clk.Now})
		const src = "export default async function main() { return 1 }"
		if err := j.PutSource("hash-abc", []byte(src)); err != nil {
			t.Fatal(err)
		}
		if err := j.PutSource("hash-abc", []byte("ignored: kept once")); err != nil {
			t.Fatal(err)
		}
		dev := &devices{answer: func(c driver.Call) (json.RawMessage, error) {
			if c.Seq == 2 {
				return nil, driver.Errorf(driver.CodeSecurity, "outside the jail")
			}
			return json.RawMessage(`{"v":[1,2,3]}`), nil
		}}
		run := mustBegin(t, j, RunMeta{Kind: "exec", Tool: "tools/t.ts", Hash: "hash-abc", Args: json.RawMessage(`{"n":10}`)})
		h := run.Middleware()(dev.host())
		calls := []driver.Call{
			call(1, "fs", "read_file", `{"path":"data/orders.json"}`),
			call(2, "fs", "read_file", `{"path":"../etc/passwd"}`),
			call(3, "random", "bytes", `{"n":8}`),
		}
		for _, c := range calls {
			h.Do(context.Background(), c)
		}
		if err := run.End(StatusOK, json.RawMessage(`{"sum":6}`), nil); err != nil {
			t.Fatal(err)
		}

		d, err := j.Export(run.ID()[:12])
		if err != nil {
			t.Fatal(err)
		}
		if d.Source != src || len(d.Entries) != 3 || d.Run.ID != run.ID() {
			t.Fatalf("Export = %+v", d)
		}
		// Through JSON, as `agentos trace --json` and golden files carry it.
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var d2 Dump
		if err := json.Unmarshal(b, &d2); err != nil {
			t.Fatal(err)
		}

		fresh, _ := openTemp(t, Options{})
		if err := fresh.Import(d2); err != nil {
			t.Fatal(err)
		}
		got, err := fresh.Export(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		gb, _ := json.Marshal(got)
		if !bytes.Equal(gb, b) {
			t.Errorf("export after import differs:\n got %s\nwant %s", gb, b)
		}
		p, err := fresh.Replayer(run.ID())
		if err != nil {
			t.Fatal(err)
		}
		rh := p.Middleware()(forbidden(t))
		for _, c := range calls {
			resp, err := rh.Do(context.Background(), c)
			if c.Seq == 2 {
				if de := abortCode(t, err); de.Code != driver.CodeSecurity {
					t.Errorf("replayed #2 = %+v", de)
				}
			} else if err != nil || string(resp) != `{"v":[1,2,3]}` {
				t.Errorf("replayed %s = %s, %v", c, resp, err)
			}
		}
		if dv := p.Finish(); dv != nil {
			t.Errorf("replay of the imported run diverged: %v", dv)
		}

		// A run without calls exports "entries": [], not null.
		empty := mustBegin(t, j, RunMeta{ID: "empty", Kind: "exec"})
		empty.End(StatusOK, nil, nil)
		de, err := j.Export("empty")
		if err != nil {
			t.Fatal(err)
		}
		if eb, _ := json.Marshal(de); !bytes.Contains(eb, []byte(`"entries":[]`)) || bytes.Contains(eb, []byte(`"source"`)) {
			t.Errorf("empty export = %s", eb)
		}
		if _, err := j.Export("missing"); !errors.Is(err, ErrNoRun) {
			t.Errorf("Export(missing) = %v", err)
		}
		if err := fresh.Import(Dump{}); err == nil {
			t.Error("Import of a dump without a run id succeeded")
		}
	})
}

// ---- close ---------------------------------------------------------------------

func TestClose(t *testing.T) {
	both(t, func(t *testing.T) {
		j, _ := openTemp(t, Options{})
		run := mustBegin(t, j, RunMeta{ID: "open-run", Kind: "exec"})
		dev := echoDevices()
		h := run.Middleware()(dev.host())
		if _, err := h.Do(context.Background(), call(1, "clock", "now", "")); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := j.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}

		got, err := h.Do(context.Background(), call(2, "clock", "now", ""))
		if de := abortCode(t, err); de.Code != driver.CodeUnavailable || got != nil {
			t.Errorf("a call after Close = %s, %+v; want no result and code %s", got, de, driver.CodeUnavailable)
		}
		if _, err := j.Begin(RunMeta{Kind: "exec"}); !errors.Is(err, ErrClosed) {
			t.Errorf("Begin after Close = %v, want ErrClosed", err)
		}
		if err := run.End(StatusOK, nil, nil); !errors.Is(err, ErrClosed) {
			t.Errorf("End after Close = %v, want ErrClosed", err)
		}
		if err := j.Import(Dump{Run: RunMeta{ID: "x"}, Entries: []Entry{{Seq: 1}}}); !errors.Is(err, ErrClosed) {
			t.Errorf("Import after Close = %v, want ErrClosed", err)
		}
		if err := j.PutSource("h", []byte("src")); !errors.Is(err, ErrClosed) {
			t.Errorf("PutSource after Close = %v, want ErrClosed", err)
		}
	})
}

// TestCloseWhileRecording closes the journal under concurrent calls: no
// panic, every call either succeeds or is refused with CodeUnavailable, and
// every call that succeeded is in the file.
func TestCloseWhileRecording(t *testing.T) {
	both(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		j := openAt(t, path, Options{MaxBatch: 16})
		run := mustBegin(t, j, RunMeta{ID: "busy", Kind: "exec"})
		h := run.Middleware()(echoDevices().host())
		var next atomic.Uint64
		var mu sync.Mutex
		var ok []uint64
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				for {
					seq := next.Add(1)
					_, err := h.Do(context.Background(), call(seq, "clock", "now", ""))
					if err != nil {
						if de := abortCode(t, err); de.Code != driver.CodeUnavailable {
							t.Errorf("#%d: %+v", seq, de)
						}
						return
					}
					mu.Lock()
					ok = append(ok, seq)
					mu.Unlock()
				}
			})
		}
		testutil.Eventually(t, 20*time.Second, "500 calls recorded (the recording stalled)", func() bool { return next.Load() >= 500 })
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		j = openAt(t, path, Options{})
		es := mustEntries(t, j, "busy")
		have := map[uint64]bool{}
		for _, e := range es {
			have[e.Seq] = true
		}
		for _, seq := range ok {
			if !have[seq] {
				t.Errorf("#%d returned success before Close but is not in the journal", seq)
			}
		}
		if len(ok) < 500-6 || len(es) != len(ok) {
			t.Errorf("%d calls succeeded, %d entries stored", len(ok), len(es))
		}
		if err := j.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// A second Open of a journal another process holds fails with an error
// saying so, instead of waiting for the lock forever (a hang would end the
// test binary at its timeout). How long the refusal takes is measured by
// BenchmarkOpenHeldFile, not asserted.
func TestOpenHeldFile(t *testing.T) {
	_, path := openTemp(t, Options{})
	_, err := Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "another agentos process") {
		t.Errorf("second Open of a held file = %v, want a clear 'another agentos process' error", err)
	}
}

func TestDurabilityString(t *testing.T) {
	for d, want := range map[Durability]string{GroupCommit: "group-commit", SyncEach: "sync-each", NoSync: "no-sync"} {
		if d.String() != want {
			t.Errorf("%d.String() = %q, want %q", d, d.String(), want)
		}
	}
	var zero Options
	if zero.Durability != GroupCommit {
		t.Error("the zero Options must mean GroupCommit")
	}
}

// ---- example -------------------------------------------------------------------

func ExampleJournal_Replayer() {
	dir, err := os.MkdirTemp("", "journal-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	j, err := Open(filepath.Join(dir, "journal.db"), Options{})
	if err != nil {
		panic(err)
	}
	defer j.Close()
	ctx := context.Background()

	// Record: the call goes to the device and into the journal.
	fs := driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"content":"[1,2,3]"}`), nil
	})
	run, _ := j.Begin(RunMeta{ID: "example-run", Kind: "exec", Tool: "tools/sum.ts"})
	live := run.Middleware()(fs)
	out, _ := live.Do(ctx, driver.Call{Seq: 1, Driver: "fs", Op: "read_file", Request: json.RawMessage(`{"path":"data/orders.json"}`)})
	fmt.Println("recorded:", string(out))
	run.End(StatusOK, json.RawMessage(`6`), nil)

	// Replay: the same call is answered from the journal; no device at all.
	p, _ := j.Replayer("example")
	replay := p.Middleware()(nil)
	out, _ = replay.Do(ctx, driver.Call{Seq: 1, Driver: "fs", Op: "read_file", Request: json.RawMessage(`{ "path": "data/orders.json" }`)})
	fmt.Println("replayed:", string(out))

	// A call the recording does not have stops the run.
	_, err = replay.Do(ctx, driver.Call{Seq: 2, Driver: "fs", Op: "read_file", Request: json.RawMessage(`{"path":"secret.txt"}`)})
	fmt.Println(err.(*driver.Error).Code, "-", p.Finish().Code)
	// Output:
	// recorded: {"content":"[1,2,3]"}
	// replayed: {"content":"[1,2,3]"}
	// abort_run - AGENTOS-J002
}

// A durable run's calls are committed before they are answered, even in
// group-commit mode: the entry is readable as soon as the call returns.
func TestDurableRun(t *testing.T) {
	both(t, func(t *testing.T) {
		j, err := openStorage(t, filepath.Join(t.TempDir(), "j.db"), Options{Durability: GroupCommit})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		run, err := j.Begin(RunMeta{Kind: "forge"})
		if err != nil {
			t.Fatal(err)
		}
		host := driver.Chain(driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) {
			return json.RawMessage(`{"answer":1}`), nil
		}), run.Durable().Middleware())
		for seq := uint64(1); seq <= 3; seq++ {
			if _, err := host.Do(context.Background(), driver.Call{Seq: seq, Driver: "llm", Op: "complete"}); err != nil {
				t.Fatal(err)
			}
			if n, err := j.Count(run.ID()); err != nil || n != int(seq) {
				t.Fatalf("after call %d the journal holds %d entries (%v)", seq, n, err)
			}
		}
	})
}

// A call interrupted by its run's cancellation is not an answer: it is not
// recorded, so recovery performs it again.
func TestInterruptedCallNotRecorded(t *testing.T) {
	both(t, func(t *testing.T) {
		j, err := openStorage(t, filepath.Join(t.TempDir(), "j.db"), Options{Durability: SyncEach})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		run, err := j.Begin(RunMeta{Kind: "exec"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		host := driver.Chain(driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			if c.Seq == 2 {
				cancel()
				return nil, ctx.Err()
			}
			return json.RawMessage(`1`), nil
		}), run.Middleware())
		_, _ = host.Do(ctx, driver.Call{Seq: 1, Driver: "fetch", Op: "fetch"})
		if _, err := host.Do(ctx, driver.Call{Seq: 2, Driver: "fetch", Op: "fetch"}); err == nil {
			t.Fatal("the interrupted call succeeded")
		}
		if n, _ := j.Count(run.ID()); n != 1 {
			t.Fatalf("%d entries, want 1: the interrupted call must not be recorded", n)
		}
	})
}

// TestPutSourceKeptByAnEarlierOpen: a source an earlier Open kept stays
// as it was when PutSource is called with its hash again, in every
// durability mode (GroupCommit queues it without reading the store first:
// the writer keeps a source only if its hash is absent).
func TestPutSourceKeptByAnEarlierOpen(t *testing.T) {
	both(t, func(t *testing.T) {
		for _, d := range []Durability{GroupCommit, SyncEach, NoSync} {
			t.Run(d.String(), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "journal.db")
				hash := fmt.Sprintf("hash-%s-%d", d, time.Now().UnixNano())
				j, err := openStorage(t, path, Options{Durability: d})
				if err != nil {
					t.Fatal(err)
				}
				if err := j.PutSource(hash, []byte("first")); err != nil {
					t.Fatal(err)
				}
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
				j = openAt(t, path, Options{Durability: d})
				if err := j.PutSource(hash, []byte("second: not kept")); err != nil {
					t.Fatal(err)
				}
				if src, err := j.Source(hash); err != nil || string(src) != "first" {
					t.Fatalf("Source = %q, %v; want the first source kept", src, err)
				}
			})
		}
	})
}
