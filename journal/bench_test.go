package journal

// Benchmarks of the journal's hot paths. The targets on the project's 2-core
// machine: group-commit recording >= 270k ops/s, replay >= 1.6M ops/s,
// fsync-per-op (SyncEach) recording >= half the disk's raw fsync rate.
//
//	go test -run XXX -bench . -count 6 ./journal/ > bench.txt
//	benchstat bench.txt
//
// ops/s is b.N divided by the timed wall time; cpu-µs/op is the process's
// CPU time per op (all threads: it includes the writer goroutine).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/benchutil"
)

// benchRequest is a realistic request; benchResponse a small JSON answer.
var (
	benchRequest  = json.RawMessage(`{"path":"data/orders.json"}`)
	benchResponse = json.RawMessage(`{"content":"[{\"id\":1,\"total\":9.5},{\"id\":2,\"total\":12}]","size":52}`)
)

// trivialHost answers every call with benchResponse.
var trivialHost = driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) {
	return benchResponse, nil
})

func reportOps(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// benchRecord records b.N calls of one run under dur. The final End, which
// returns only once every queued entry is committed, is inside the timed
// region, so queued-but-uncommitted work is not hidden.
func benchRecord(b *testing.B, dur Durability) {
	j, err := Open(filepath.Join(b.TempDir(), "journal.db"), Options{Durability: dur})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	run, err := j.Begin(RunMeta{Kind: "exec", Tool: "tools/orders.ts"})
	if err != nil {
		b.Fatal(err)
	}
	h := run.Middleware()(trivialHost)
	ctx := context.Background()
	b.ReportAllocs()
	cpu := benchutil.CPUTime()
	b.ResetTimer()
	for i := range b.N {
		if _, err := h.Do(ctx, driver.Call{Seq: uint64(i + 1), Driver: "fs", Op: "read_file", Request: benchRequest}); err != nil {
			b.Fatal(err)
		}
	}
	if err := run.End(StatusOK, nil, nil); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportOps(b)
	benchutil.ReportCPU(b, cpu)
}

func BenchmarkRecordGroupCommit(b *testing.B) { benchRecord(b, GroupCommit) }

// BenchmarkRecordNoSync separates the CPU cost of recording from the disk's.
func BenchmarkRecordNoSync(b *testing.B) { benchRecord(b, NoSync) }

// BenchmarkRecordSyncEach records with one commit + fsync per call, and
// compares with the raw fsync rate of the same disk, measured for ~200 ms
// just before (reported as raw-fsync/s and x-raw = ops/s ÷ raw-fsync/s).
func BenchmarkRecordSyncEach(b *testing.B) {
	raw := rawFsyncRate(b, 200*time.Millisecond)
	benchRecord(b, SyncEach)
	ops := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(raw, "raw-fsync/s")
	b.ReportMetric(ops/raw, "x-raw")
	b.Logf("N=%d: SyncEach %.0f ops/s, raw fsync %.0f/s on the same disk: ratio %.2f (target >= 0.50)", b.N, ops, raw, ops/raw)
}

// rawFsyncRate writes 100 bytes and fsyncs, for about d, in a file next to
// where the benchmark's journal goes.
func rawFsyncRate(b *testing.B, d time.Duration) float64 {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 100)
	n, start := 0, time.Now()
	for time.Since(start) < d {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkRawFsync is the disk's own rate: 100 bytes written + f.Sync() per op.
func BenchmarkRawFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 100)
	b.ResetTimer()
	for range b.N {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportOps(b)
}

const replayN = 10000

// recordForReplay records replayN calls (each its own path) in a fresh
// journal and returns it, the run id and the calls.
func recordForReplay(b *testing.B) (*Journal, string, []driver.Call) {
	j, err := Open(filepath.Join(b.TempDir(), "journal.db"), Options{Durability: NoSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	run, err := j.Begin(RunMeta{Kind: "exec"})
	if err != nil {
		b.Fatal(err)
	}
	calls := make([]driver.Call, replayN)
	h := run.Middleware()(trivialHost)
	for i := range calls {
		calls[i] = driver.Call{Seq: uint64(i + 1), Driver: "fs", Op: "read_file", Request: json.RawMessage(fmt.Sprintf(`{"path":"data/orders-%d.json"}`, i))}
		if _, err := h.Do(context.Background(), calls[i]); err != nil {
			b.Fatal(err)
		}
	}
	if err := run.End(StatusOK, nil, nil); err != nil {
		b.Fatal(err)
	}
	return j, run.ID(), calls
}

// BenchmarkReplay answers recorded calls through Replayer.Middleware. One
// Replayer serves the whole loop, cycling over its 10,000 seqs (answering a
// seq again costs the same as the first time); loading the recording is
// BenchmarkReplayerLoad.
func BenchmarkReplay(b *testing.B) {
	j, id, calls := recordForReplay(b)
	p, err := j.Replayer(id)
	if err != nil {
		b.Fatal(err)
	}
	h := p.Middleware()(driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) {
		panic("replay called the host")
	}))
	ctx := context.Background()
	b.ReportAllocs()
	cpu := benchutil.CPUTime()
	b.ResetTimer()
	for i := range b.N {
		if _, err := h.Do(ctx, calls[i%replayN]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportOps(b)
	benchutil.ReportCPU(b, cpu)
	if d := p.Finish(); d != nil && b.N >= replayN {
		b.Fatal(d)
	}
}

// BenchmarkReplayerLoad is the cost of j.Replayer for a 10,000-entry run,
// reported per entry (entries/s).
func BenchmarkReplayerLoad(b *testing.B) {
	j, id, _ := recordForReplay(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := j.Replayer(id); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*replayN)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkBytesPerEntry measures what one recorded call costs on disk:
// the journal file's size after b.N calls of one run (then closed), over
// b.N. Run it with a fixed count, so every shape records as many calls:
//
//	go test -run XXX -bench BytesPerEntry -benchtime 2000x ./journal/
//
// disk-B/entry is the file's size per call (bbolt pages, free pages and
// all), used-B/entry the same without the free pages bbolt will reuse;
// payload-B/entry is the request and response bytes each call carries. The "inline" shapes store every payload inside its entry, as
// journals did before blobs (Options.BlobThreshold < 0).
func BenchmarkBytesPerEntry(b *testing.B) {
	distinct := func(size int) func(i int) json.RawMessage {
		return func(i int) json.RawMessage {
			v, _ := json.Marshal(fmt.Sprintf("%08d", i) + strings.Repeat("x", size-10))
			return v
		}
	}
	same := func(size int) func(int) json.RawMessage {
		v, _ := json.Marshal(strings.Repeat("x", size-2))
		return func(int) json.RawMessage { return v }
	}
	for _, c := range []struct {
		name      string
		response  func(i int) json.RawMessage
		threshold int
	}{
		{"small", func(int) json.RawMessage { return benchResponse }, 0},
		{"16KiB-distinct", distinct(16 << 10), 0},
		{"16KiB-distinct/inline", distinct(16 << 10), -1},
		{"64KiB-same", same(64 << 10), 0},
		{"64KiB-same/inline", same(64 << 10), -1},
		{"64KiB-distinct", distinct(64 << 10), 0},
		{"64KiB-distinct/inline", distinct(64 << 10), -1},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "journal.db")
			j, err := Open(path, Options{BlobThreshold: c.threshold})
			if err != nil {
				b.Fatal(err)
			}
			run, err := j.Begin(RunMeta{Kind: "exec", Tool: "tools/orders.ts"})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			payload := 0
			for i := range b.N {
				resp := c.response(i)
				payload += len(benchRequest) + len(resp)
				h := run.Middleware()(driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) { return resp, nil }))
				if _, err := h.Do(ctx, driver.Call{Seq: uint64(i + 1), Driver: "fs", Op: "read_file", Request: benchRequest}); err != nil {
					b.Fatal(err)
				}
			}
			if err := run.End(StatusOK, nil, nil); err != nil {
				b.Fatal(err)
			}
			if err := j.Close(); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true})
			if err != nil {
				b.Fatal(err)
			}
			var used int64
			db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
			used -= int64(db.Stats().FreePageN) * int64(db.Info().PageSize)
			db.Close()
			b.ReportMetric(float64(fi.Size())/float64(b.N), "disk-B/entry")
			b.ReportMetric(float64(used)/float64(b.N), "used-B/entry")
			b.ReportMetric(float64(payload)/float64(b.N), "payload-B/entry")
		})
	}
}

// BenchmarkOpenHeldFile is how long a second Open of a held journal takes
// to be refused: the lock wait, bounded by the journal (2 s in bolt's
// Timeout). TestOpenHeldFile checks the refusal itself.
//
//	go test -run XXX -bench OpenHeldFile -benchtime 3x ./journal/
func BenchmarkOpenHeldFile(b *testing.B) {
	_, path := openTemp(b, Options{})
	for b.Loop() {
		if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "another agentos process") {
			b.Fatalf("second Open of a held file = %v, want a clear 'another agentos process' error", err)
		}
	}
}

// BenchmarkRecordStorage compares the storages (the embedded bbolt file,
// PostgreSQL on loopback from internal/pgtest, fsync on) per durability
// mode, with one run recording and with 16 runs recording at once (the
// case group commit is for: their entries share transactions).
//
//	go test -run XXX -bench RecordStorage ./journal/
func BenchmarkRecordStorage(b *testing.B) {
	for _, storage := range []string{"bbolt", "postgres"} {
		b.Run(storage, func(b *testing.B) {
			if storage == "postgres" {
				pgServer(b)
			}
			for _, dur := range []Durability{GroupCommit, SyncEach, NoSync} {
				for _, runs := range []int{1, 16} {
					b.Run(fmt.Sprintf("%s/runs=%d", dur, runs), func(b *testing.B) {
						benchRecordRuns(b, dur, runs)
					})
				}
			}
		})
	}
}

// benchRecordRuns records b.N calls spread over runs concurrent runs.
func benchRecordRuns(b *testing.B, dur Durability, runs int) {
	j, err := openStorage(b, filepath.Join(b.TempDir(), "journal.db"), Options{Durability: dur})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	handles := make([]*Run, runs)
	for i := range handles {
		if handles[i], err = j.Begin(RunMeta{Kind: "exec", Tool: "tools/orders.ts"}); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	errs := make(chan error, runs)
	for r, run := range handles {
		go func() {
			h := run.Middleware()(trivialHost)
			var err error
			for seq := uint64(1); int(seq-1)*runs+r < b.N && err == nil; seq++ {
				_, err = h.Do(ctx, driver.Call{Seq: seq, Driver: "fs", Op: "read_file", Request: benchRequest})
			}
			if err == nil {
				err = run.End(StatusOK, nil, nil)
			}
			errs <- err
		}()
	}
	for range runs {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportOps(b)
}
