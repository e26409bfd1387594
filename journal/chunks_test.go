package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/benchutil"
)

// chatTools are the tool specs every request of a conversation repeats.
var chatTools = []any{
	map[string]any{"name": "read_file", "description": "Read a file of the tool root and return its text.", "parameters": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}},
	map[string]any{"name": "exec_tool", "description": "Run a registered tool with arguments and return its result.", "parameters": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "args": map[string]any{"type": "object"}}, "required": []string{"path"}}},
}

// chat returns the requests and answers of a model conversation of turns
// turns, as the agent loop makes them: request k repeats the system
// prompt, the task and every earlier (tool call, tool result) pair, and
// adds the last answer's; the answer's message is what the next request
// appends. seed makes the task (and so every message after it) differ
// between conversations; shared is the system prompt they all start with.
func chat(turns int, seed string) (reqs, answers []json.RawMessage) {
	messages := []any{
		map[string]any{"role": "system", "content": "You are an agent of agentos. " + strings.Repeat("Use the tools; answer briefly. ", 20)},
		map[string]any{"role": "user", "content": "Task " + seed + ": sum the totals of the orders in data/."},
	}
	for k := 1; k <= turns; k++ {
		req, _ := json.Marshal(map[string]any{"messages": messages, "tools": chatTools})
		reqs = append(reqs, req)
		msg := map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_%s_%d", seed, k), "name": "read_file", "arguments": fmt.Sprintf(`{"path":"data/orders-%d.json"}`, k)}}}
		answer, _ := json.Marshal(map[string]any{"message": msg, "finish_reason": "tool_calls", "usage": map[string]any{"prompt_tokens": 100 * k, "completion_tokens": 20, "total_tokens": 100*k + 20}})
		answers = append(answers, answer)
		result := fmt.Sprintf(`{"content":"%s"}`, strings.Repeat(fmt.Sprintf("order %s-%d total 12.50; ", seed, k), 40))
		messages = append(messages, msg, map[string]any{"role": "tool", "tool_call_id": fmt.Sprintf("call_%s_%d", seed, k), "content": result})
	}
	return reqs, answers
}

// recordChat records a conversation as one run of llm.complete calls.
func recordChat(t testing.TB, j *Journal, reqs, answers []json.RawMessage) string {
	t.Helper()
	r := mustBegin(t, j, RunMeta{Kind: "agent"})
	h := r.Middleware()(driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
		return answers[c.Seq-1], nil
	}))
	for i, req := range reqs {
		if _, err := h.Do(context.Background(), driver.Call{Seq: uint64(i + 1), Driver: "llm", Op: "complete", Request: req}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.End(StatusOK, json.RawMessage(`"done"`), nil); err != nil {
		t.Fatal(err)
	}
	return r.ID()
}

// usedBytes is what the journal at path holds once closed: the bbolt
// file's pages less its free ones, or what the PostgreSQL tables hold.
func usedBytes(t testing.TB, path string) int64 {
	t.Helper()
	if _, ok := pgPaths.Load(path); ok {
		return int64(len(storedBytes(t, path)))
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var used int64
	db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	return used - int64(db.Stats().FreePageN)*int64(db.Info().PageSize)
}

// chatJournal records a conversation of turns turns into a new journal
// and returns its size, the journal (reopened) and the run.
func chatJournal(t *testing.T, turns int, opts Options) (int64, *Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	opts.Durability = NoSync
	j, err := openStorage(t, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	reqs, answers := chat(turns, "a")
	id := recordChat(t, j, reqs, answers)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	size := usedBytes(t, path)
	return size, openAt(t, path, opts), id
}

// Issue 29, item 3: every model request was journaled whole, and a
// conversation's request repeats every earlier turn, so an agent run's
// journal grew with the square of its turns. Its messages are now chunks,
// each kept once: the journal grows linearly, a 100-turn conversation's is
// over ten times smaller, and every request and answer reads back (and
// replays) byte for byte as the whole-payload journal gives them.
func TestConversationStoredOnce(t *testing.T) {
	both(t, func(t *testing.T) {
		whole50, _, _ := chatJournal(t, 50, Options{NoChunks: true})
		whole100, wj, wid := chatJournal(t, 100, Options{NoChunks: true})
		chunked50, _, _ := chatJournal(t, 50, Options{})
		chunked100, cj, cid := chatJournal(t, 100, Options{})
		t.Logf("50 turns: %d bytes whole, %d chunked; 100 turns: %d whole, %d chunked (%.1fx)", whole50, chunked50, whole100, chunked100, float64(whole100)/float64(chunked100))
		if whole100 < 10*chunked100 {
			t.Errorf("100 turns: %d bytes chunked against %d whole: want at least 10x smaller", chunked100, whole100)
		}
		if float64(chunked100) > 2.5*float64(chunked50) {
			t.Errorf("chunked: %d bytes for 50 turns, %d for 100: want linear growth", chunked50, chunked100)
		}
		if float64(whole100) < 3*float64(whole50) {
			t.Errorf("whole payloads: %d bytes for 50 turns, %d for 100: the comparison lost its quadratic baseline", whole50, whole100)
		}
		want, got := mustEntries(t, wj, wid), mustEntries(t, cj, cid)
		if len(got) != 100 || len(want) != 100 {
			t.Fatalf("entries: %d chunked, %d whole", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i].Request, want[i].Request) || !bytes.Equal(got[i].Response, want[i].Response) {
				t.Fatalf("call #%d reads back otherwise than stored whole:\n%.300s\n%.300s", i+1, got[i].Request, want[i].Request)
			}
		}
		// Replay answers each request from the chunks; a request that
		// differs anywhere (an early message) still diverges, showing the
		// whole recorded request.
		reqs, _ := chat(100, "a")
		p, err := cj.Replayer(cid)
		if err != nil {
			t.Fatal(err)
		}
		h := p.Middleware()(forbidden(t))
		for i := range 99 {
			out, err := h.Do(context.Background(), driver.Call{Seq: uint64(i + 1), Driver: "llm", Op: "complete", Request: reqs[i]})
			if err != nil || !bytes.Equal(out, want[i].Response) {
				t.Fatalf("replayed call #%d: %v", i+1, err)
			}
		}
		changed := bytes.Replace(reqs[99], []byte("orders-3.json"), []byte("orders-X.json"), 1)
		_, err = h.Do(context.Background(), driver.Call{Seq: 100, Driver: "llm", Op: "complete", Request: changed})
		d := p.Finish()
		if err == nil || d == nil || d.Code != CodeRequestDiffers || !strings.Contains(d.Expected, "orders-3.json") || !strings.Contains(d.Expected, "orders-99.json") {
			t.Fatalf("a request differing in its third turn: %v %+v", err, d)
		}
		// An export holds whole payloads and imports into a journal that
		// chunks them again.
		dump, err := cj.Export(cid)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(dump); bytes.Contains(b, []byte("_chunks")) {
			t.Fatal("the export holds chunk references")
		}
		other := openAt(t, filepath.Join(t.TempDir(), "other.db"), Options{Durability: NoSync})
		dump.Run.ID = "20260101-000000.000-abcdef"
		if err := other.Import(dump); err != nil {
			t.Fatal(err)
		}
		if es := mustEntries(t, other, dump.Run.ID); len(es) != 100 || !bytes.Equal(es[99].Request, want[99].Request) {
			t.Fatal("an imported conversation does not read back whole")
		}
	})
}

// Chunks are shared by every run that holds them (the system prompt and
// tools of every agent run, here whole conversations): pruning one run
// keeps what another still refers to, and pruning the last deletes them.
func TestSharedChunksSurvivePrune(t *testing.T) {
	both(t, func(t *testing.T) {
		clk := newClock()
		j, path := openTemp(t, Options{Durability: NoSync, Now: clk.Now})
		reqs, answers := chat(10, "shared")
		first := recordChat(t, j, reqs, answers)
		clk.Advance(time.Hour)
		second := recordChat(t, j, reqs, answers)
		want := mustEntries(t, j, second)
		rep, err := j.Prune(PruneOptions{KeepRuns: 1})
		if err != nil || rep.Runs != 1 || rep.Blobs != 0 {
			t.Fatalf("pruning the older run: %+v %v (no chunk may go: the newer run holds them all)", rep, err)
		}
		if _, err := j.Get(first); !errors.Is(err, ErrNoRun) {
			t.Fatalf("the pruned run: %v", err)
		}
		if !onPostgres(t) {
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := Compact(path); err != nil {
				t.Fatal(err)
			}
			j = openAt(t, path, Options{Durability: NoSync, Now: clk.Now})
		}
		got := mustEntries(t, j, second)
		for i := range want {
			if !bytes.Equal(got[i].Request, want[i].Request) || !bytes.Equal(got[i].Response, want[i].Response) {
				t.Fatalf("call #%d of the kept run changed after the prune", i+1)
			}
		}
		clk.Advance(time.Hour)
		other, otherAnswers := chat(3, "other")
		third := recordChat(t, j, other, otherAnswers)
		rep, err = j.Prune(PruneOptions{KeepRuns: 1})
		if err != nil || rep.Runs != 1 || rep.Blobs == 0 {
			t.Fatalf("pruning the last run holding the chunks: %+v %v", rep, err)
		}
		if es := mustEntries(t, j, third); len(es) != 3 || !bytes.Equal(es[2].Request, j.redact.json(other[2])) {
			t.Fatal("the run left reads back otherwise")
		}
		if err := j.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// A missing or damaged chunk fails the read of its run with an error
// naming the run and the call, never a wrong request.
func TestDamagedChunk(t *testing.T) {
	both(t, func(t *testing.T) {
		j, path := openTemp(t, Options{Durability: NoSync})
		reqs, answers := chat(5, "d")
		id := recordChat(t, j, reqs, answers)
		var victim string // the chunk of the first tool result, in calls #2..#5
		for _, h := range func() []string {
			var s storedEntry
			es := rawEntries(t, j, path, id)
			json.Unmarshal(es[1], &s)
			return s.RequestChunks.Members[0].Add
		}() {
			victim = h
		}
		for _, damage := range []struct {
			name  string
			bbolt func(tx *bolt.Tx) error
			pg    string
			want  string
		}{
			{"corrupt", func(tx *bolt.Tx) error {
				return tx.Bucket(bucketChunks).Put([]byte(victim), []byte(`{"role":"tool","content":"forged"}`))
			}, `UPDATE agentos_journal_blobs SET data = '{"role":"tool","content":"forged"}' WHERE hash = '` + victim + `'`, "is damaged"},
			{"missing", func(tx *bolt.Tx) error { return tx.Bucket(bucketChunks).Delete([]byte(victim)) },
				`DELETE FROM agentos_journal_blobs WHERE hash = '` + victim + `'`, "which the journal lacks"},
			// An entry that keeps fewer of its base's messages: every
			// chunk is sound, the list is not.
			{"list", func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketEntries).Bucket([]byte(id))
				return b.Put(seqKey(2), bytes.Replace(b.Get(seqKey(2)), []byte(`"keep":2`), []byte(`"keep":1`), 1))
			}, `UPDATE agentos_journal_entries SET entry = convert_to(replace(convert_from(entry, 'UTF8'), '"keep":2', '"keep":1'), 'UTF8') WHERE seq = 2`, "does not match the list"},
		} {
			t.Run(damage.name, func(t *testing.T) {
				j.Close()
				if onPostgres(t) {
					conn, err := pgx.Connect(context.Background(), pgDSNFor(t, path))
					if err != nil {
						t.Fatal(err)
					}
					_, err = conn.Exec(context.Background(), damage.pg)
					conn.Close(context.Background())
					if err != nil {
						t.Fatal(err)
					}
				} else {
					db, err := bolt.Open(path, 0o600, nil)
					if err != nil {
						t.Fatal(err)
					}
					err = db.Update(damage.bbolt)
					db.Close()
					if err != nil {
						t.Fatal(err)
					}
				}
				j = openAt(t, path, Options{})
				_, err := j.Entries(id)
				if err == nil || !strings.Contains(err.Error(), "run "+id+", call #2") || !strings.Contains(err.Error(), damage.want) || (damage.name != "list" && !strings.Contains(err.Error(), victim)) {
					t.Fatalf("reading a run with a %s chunk: %v", damage.name, err)
				}
				if _, err := j.Replayer(id); err == nil || !strings.Contains(err.Error(), id) {
					t.Fatalf("replaying it: %v", err)
				}
			})
		}
	})
}

// rawEntries returns run id's stored entries as the storage keeps them.
func rawEntries(t testing.TB, j *Journal, path, id string) [][]byte {
	t.Helper()
	var out [][]byte
	if onPostgres(t) {
		conn, err := pgx.Connect(context.Background(), pgDSNFor(t, path))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		rows, err := conn.Query(context.Background(), "SELECT entry FROM agentos_journal_entries WHERE run = $1 ORDER BY seq", id)
		if err != nil {
			t.Fatal(err)
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	j.read(func(st store) error {
		return st.(*boltStore).db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketEntries).Bucket([]byte(id)).ForEach(func(_, v []byte) error {
				out = append(out, bytes.Clone(v))
				return nil
			})
		})
	})
	return out
}

// A journal of format 2 (before chunks) reads as before, and opening it
// raises its format, so that an older agentos refuses it once it may
// hold chunked payloads.
func TestFormatRaised(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j := openAt(t, path, Options{})
	j.Close()
	db, _ := bolt.Open(path, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketChunks); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte("2"))
	})
	db.Close()
	j = openAt(t, path, Options{})
	reqs, answers := chat(3, "f")
	id := recordChat(t, j, reqs, answers)
	if es := mustEntries(t, j, id); len(es) != 3 {
		t.Fatalf("entries: %d", len(es))
	}
	j.Close()
	db, _ = bolt.Open(path, 0o600, nil)
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyFormat); string(v) != fmt.Sprint(storageFormat) {
			t.Errorf("format after opening a format-2 journal: %s, want %d", v, storageFormat)
		}
		return nil
	})
}

// BenchmarkLoadConversation is the journal's part of replaying a 100-turn
// conversation: loading its recording (Replayer), payloads whole and as
// chunks. tests/e2e's BenchmarkConversationJournal replays the agent loop
// too.
//
//	go test -run XXX -bench LoadConversation ./journal/
func BenchmarkLoadConversation(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts Options
	}{{"whole", Options{NoChunks: true}}, {"chunked", Options{}}} {
		b.Run(mode.name, func(b *testing.B) {
			mode.opts.Durability = NoSync
			j, _ := openTemp(b, mode.opts)
			reqs, answers := chat(100, "bench")
			id := recordChat(b, j, reqs, answers)
			b.ReportAllocs()
			cpu := benchutil.CPUTime()
			for b.Loop() {
				if _, err := j.Replayer(id); err != nil {
					b.Fatal(err)
				}
			}
			benchutil.ReportCPU(b, cpu)
		})
	}
}

// Any payload the splitter accepts is put back byte for byte, alone and
// as the continuation of the previous one (a base); anything else is
// stored whole.
func FuzzChunkRoundTrip(f *testing.F) {
	reqs, answers := chat(2, "fuzz")
	for _, s := range []string{`{}`, `{"a":[]}`, `{"a":[1,{"b":"}],\""}],"c":null}`, `{"a" :[1]}`, `{"\u0061":[1]}`, `{"a":[1,2],"a":[3]}`, `[1,2]`, `{"a":[[1],[2]]}`} {
		f.Add([]byte(s), []byte(`{"a":[1]}`))
	}
	f.Add([]byte(reqs[0]), []byte(reqs[1]))
	f.Add([]byte(answers[0]), []byte(answers[1]))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		ck := &chunker{}
		kept := map[string][]byte{}
		byseq := map[uint64]*storedEntry{}
		for seq, p := range [][]byte{first, second} {
			skeleton, set, blobs, ok := ck.chunkPayload(uint64(seq+1), "request", p)
			if !ok {
				continue
			}
			for _, b := range blobs {
				kept[b.hash] = b.data
			}
			s := &storedEntry{Entry: Entry{Seq: uint64(seq + 1), Request: skeleton}, RequestChunks: set}
			byseq[s.Seq] = s
			d := &runDecoder{run: "r", getBlob: func(h string) []byte { return kept[h] }, byseq: byseq,
				chunks: map[string][]byte{}, lists: map[string][]string{}, busy: map[string]bool{}}
			got, err := d.fill(s, "request", skeleton, set)
			if err != nil || !bytes.Equal(got, p) {
				t.Fatalf("%q put back as %q (%v)", p, got, err)
			}
		}
	})
}
