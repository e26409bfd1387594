package journal

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentos-run/agentos/driver"
)

// pgOnly runs body under the "postgres" name the helpers look for, skipping
// when PostgreSQL is not installed.
func pgOnly(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	t.Run("postgres", func(t *testing.T) {
		pgServer(t)
		body(t)
	})
}

// Path never shows the password; a newer storage format is refused with
// ErrFormat, as a bbolt file's is.
func TestPostgresPathAndFormat(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		dsn := pgDSNFor(t, path)
		withPassword := strings.Replace(dsn, "postgres://agent@", "postgres://agent:hunter2-secret@", 1)
		j, err := OpenPostgres(withPassword, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p := j.Path(); strings.Contains(p, "hunter2") || !strings.HasPrefix(p, "postgres://agent@127.0.0.1:") || !strings.HasSuffix(p, "/postgres") {
			t.Fatalf("Path() = %q: want postgres://agent@127.0.0.1:PORT/postgres, no password", p)
		}
		j.Close()

		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "UPDATE agentos_journal_meta SET value = '99' WHERE key = 'format'"); err != nil {
			t.Fatal(err)
		}
		_, err = OpenPostgres(dsn, Options{})
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "format 99") || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("opening a newer format: %v, want ErrFormat naming format 99", err)
		}
		if _, err := OpenPostgres("postgres://agent:hunter2@127.0.0.1:1/none?connect_timeout=2", Options{}); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("opening an unreachable server: %v (want an error without the password)", err)
		}
	})
}

// Two nodes record runs with the same large payloads while a third prunes
// again and again: no deadlock, and no run left refers to a payload Prune
// deleted (Prune locks out recording; recording puts a payload back).
func TestPruneWhileNodesRecord(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		nodes := []*Journal{openAt(t, path, Options{Owner: "a"}), openAt(t, path, Options{Owner: "b"}), openAt(t, path, Options{Owner: "pruner"})}
		page := bigString(64<<10, "shared page:")
		var wg sync.WaitGroup
		var recording sync.WaitGroup
		var recorded, pruned atomic.Int64
		for _, j := range nodes[:2] {
			recording.Go(func() {
				for range 15 {
					recordRun(t, j, 4, func(seq uint64) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"i":%d}`, seq)) }, func(uint64) json.RawMessage { return page })
					recorded.Add(1)
				}
			})
		}
		done := make(chan struct{})
		go func() { recording.Wait(); close(done) }()
		wg.Go(func() {
			for range 2000 { // until the recorders are done
				select {
				case <-done:
					return
				default:
				}
				rep, err := nodes[2].Prune(PruneOptions{KeepRuns: 2})
				if err != nil {
					t.Error(err)
					return
				}
				pruned.Add(int64(rep.Runs))
			}
		})
		wg.Wait()
		<-done
		if pruned.Load() == 0 {
			t.Fatal("no prune deleted a run while the nodes recorded: the test proves nothing")
		}
		if err := nodes[2].Check(); err != nil {
			t.Fatal(err)
		}
		runs, _ := nodes[2].Runs()
		for _, r := range runs {
			es, err := nodes[2].Entries(r.ID)
			if err != nil || len(es) != 4 || string(es[3].Response) != string(page) {
				t.Fatalf("run %s after concurrent prunes: %d entries, %v", r.ID, len(es), err)
			}
		}
		t.Logf("%d runs recorded, %d pruned while recording, %d left", recorded.Load(), pruned.Load(), len(runs))
	})
}

// pgCrashCalls is how many calls the crash child makes.
const pgCrashCalls = 400

// pgCrashChild records one run with SyncEach into the PostgreSQL journal
// named by AGENTOS_PG_CRASH_DSN, printing "ack N" once call N returned: the
// parent SIGKILLs it at a random point.
func pgCrashChild() {
	j, err := OpenPostgres(os.Getenv("AGENTOS_PG_CRASH_DSN"), Options{Durability: SyncEach, Owner: "crashing-node"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	run, err := j.Begin(RunMeta{Kind: "exec", Tool: "tools/long.ts"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	fmt.Println("run", run.ID())
	h := run.Middleware()(driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"answer":%d,"pad":%q}`, c.Seq, strings.Repeat("x", int(c.Seq%7)*3000))), nil
	}))
	for seq := uint64(1); seq <= pgCrashCalls; seq++ {
		if _, err := h.Do(context.Background(), call(seq, "paid", "ask", fmt.Sprintf(`{"item":%d}`, seq))); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println("ack", seq)
	}
	run.End(StatusOK, nil, nil)
	j.Close()
	fmt.Println("done")
	os.Exit(0)
}

// A node recording into PostgreSQL under SyncEach is SIGKILLed at random
// points: every call it acknowledged is in the journal, whole; the journal
// checks clean; and another node takes the run over once the dead node's
// claim lapses.
func TestPostgresCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes; not in -short")
	}
	pgOnly(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
		for trial := range 6 {
			killAfter := 1 + rng.IntN(pgCrashCalls-1)
			t.Run(fmt.Sprintf("kill-after-%d-acks", killAfter), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), fmt.Sprintf("journal-%d.db", trial))
				dsn := pgDSNFor(t, path)
				runID, acked := pgRunAndKill(t, dsn, killAfter)

				clk := newManualClock()
				j := openAt(t, path, Options{Durability: SyncEach, Owner: "survivor", Now: clk.Now})
				if err := j.Check(); err != nil {
					t.Fatalf("after SIGKILL: %v", err)
				}
				entries, err := j.Entries(runID)
				if err != nil {
					t.Fatal(err)
				}
				have := map[uint64]Entry{}
				for _, e := range entries {
					have[e.Seq] = e
				}
				for _, seq := range acked {
					e, ok := have[seq]
					if !ok {
						t.Fatalf("call #%d was acknowledged under SyncEach but is not in the journal", seq)
					}
					var a struct{ Answer uint64 }
					if err := json.Unmarshal(e.Response, &a); err != nil || a.Answer != seq {
						t.Fatalf("call #%d reads back as %s", seq, e.Response)
					}
				}
				m, err := j.Get(runID)
				if err != nil {
					t.Fatal(err)
				}
				if m.Status != StatusRunning || m.Owner != "crashing-node" {
					t.Fatalf("the crashed run: %s, owner %q", m.Status, m.Owner)
				}
				// The dead node's claim holds until it lapses, then the
				// run is the survivor's to resume.
				if _, err := j.Recover(runID); !errors.Is(err, ErrClaimed) {
					t.Fatalf("recovering while the dead node's claim holds: %v", err)
				}
				clk.Advance(DefaultLease + time.Second)
				rec, err := j.Recover(runID)
				if err != nil {
					t.Fatal(err)
				}
				h := rec.Middleware()(driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
					return json.RawMessage(fmt.Sprintf(`{"answer":%d}`, c.Seq)), nil
				}))
				for seq := uint64(1); seq <= pgCrashCalls; seq++ {
					if _, err := h.Do(context.Background(), call(seq, "paid", "ask", fmt.Sprintf(`{"item":%d}`, seq))); err != nil {
						t.Fatalf("resuming #%d: %v", seq, err)
					}
				}
				if err := rec.Run().End(StatusOK, nil, nil); err != nil {
					t.Fatal(err)
				}
				if n := mustCount(t, j, runID); n != pgCrashCalls {
					t.Fatalf("%d calls after the takeover, want %d", n, pgCrashCalls)
				}
			})
		}
	})
}

// pgRunAndKill starts the crash child and SIGKILLs it once it acknowledged
// killAfter calls; it returns the run id and the acknowledged calls.
func pgRunAndKill(t *testing.T, dsn string, killAfter int) (string, []uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTOS_PG_CRASH_CHILD=1", "AGENTOS_PG_CRASH_DSN="+dsn)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var runID string
	var acked []uint64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "run":
			runID = f[1]
		case len(f) == 2 && f[0] == "ack":
			n, _ := strconv.ParseUint(f[1], 10, 64)
			acked = append(acked, n)
		case len(f) > 0 && f[0] == "error":
			t.Fatalf("crash child: %s", sc.Text())
		}
		if len(acked) >= killAfter {
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if runID == "" {
		t.Fatal("the crash child began no run")
	}
	return runID, acked
}

// Path names the database without the password, in either DSN form.
func TestPostgresName(t *testing.T) {
	for _, c := range []struct{ dsn, want string }{
		{"postgres://u:pw@db.example:5433/agentos?sslmode=disable", "postgres://u@db.example:5433/agentos"},
		{"host=db.example port=5432 user=u password=pw dbname=j sslmode=disable", "postgres://u@db.example:5432/j"},
		{"host=/var/run/postgresql user=u password=pw dbname=j", "postgres://u@/j?host=%2Fvar%2Frun%2Fpostgresql"},
	} {
		cfg, err := pgx.ParseConfig(c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := pgName(cfg); got != c.want {
			t.Errorf("pgName(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}

// Get's prefix match treats LIKE's wildcards in an id as plain characters.
func TestPostgresPrefixWildcards(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		j, _ := openTemp(t, Options{})
		for _, id := range []string{"a_b-1", "axb-2", "a%c-3", "abc-4"} {
			mustBegin(t, j, RunMeta{ID: id, Kind: "exec"})
		}
		for prefix, want := range map[string]string{"a_": "a_b-1", "a%": "a%c-3", "ax": "axb-2", "abc": "abc-4"} {
			if m, err := j.Get(prefix); err != nil || m.ID != want {
				t.Errorf("Get(%q) = %q, %v; want %q", prefix, m.ID, err, want)
			}
		}
		if _, err := j.Get("a"); !errors.Is(err, ErrAmbiguous) {
			t.Errorf("Get(a): %v, want ErrAmbiguous", err)
		}
	})
}

// Check finds what a damaged PostgreSQL journal lacks: a payload an entry
// refers to, an entry that does not decode.
func TestPostgresCheckFindsDamage(t *testing.T) {
	pgOnly(t, func(t *testing.T) {
		j, path := openTemp(t, Options{})
		page := bigString(DefaultBlobThreshold+1, "page:")
		id := recordRun(t, j, 2, func(seq uint64) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"i":%d}`, seq)) }, func(uint64) json.RawMessage { return page })
		if err := j.Check(); err != nil {
			t.Fatalf("a sound journal: %v", err)
		}
		conn, err := pgx.Connect(context.Background(), pgDSNFor(t, path))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		for _, q := range []string{
			"DELETE FROM agentos_journal_blobs",
			"UPDATE agentos_journal_entries SET entry = 'not json' WHERE seq = 1",
		} {
			if _, err := conn.Exec(context.Background(), q); err != nil {
				t.Fatal(err)
			}
		}
		err = j.Check()
		if err == nil || !strings.Contains(err.Error(), "call #2 refers to payload") || !strings.Contains(err.Error(), "call #1: the entry does not decode") || !strings.Contains(err.Error(), id) {
			t.Fatalf("Check of a damaged journal: %v", err)
		}
		if _, err := j.Entries(id); err == nil || !strings.Contains(err.Error(), "lacks") && !strings.Contains(err.Error(), "invalid") {
			t.Fatalf("reading a damaged run: %v", err)
		}
	})
}
