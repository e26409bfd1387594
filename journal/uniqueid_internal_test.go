package journal

import (
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"
)

// countingStore counts the storage lookups of run ids.
type countingStore struct {
	*boltStore
	lookups int
}

func (s *countingStore) exists(id string) (bool, error) {
	s.lookups++
	return s.boltStore.exists(id)
}

// drawing makes the next ids' random parts those of *seq, in order, then
// random ones.
func drawing(t *testing.T, seq *[][3]byte) {
	t.Helper()
	prev := readRandom
	readRandom = func(r []byte) {
		if len(*seq) == 0 {
			rand.Read(r)
			return
		}
		copy(r, (*seq)[0][:])
		*seq = (*seq)[1:]
	}
	t.Cleanup(func() { readRandom = prev })
}

func openCounting(t *testing.T, path string, now *manualClock) (*Journal, *countingStore) {
	t.Helper()
	j, err := Open(path, Options{Durability: GroupCommit, Now: now.Now})
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{boltStore: j.st.(*boltStore)}
	j.st = cs
	t.Cleanup(func() { j.Close() })
	return j, cs
}

func begin(t *testing.T, j *Journal, id string) string {
	t.Helper()
	r, err := j.Begin(RunMeta{ID: id, Kind: "exec", Tool: "tools/t.ts"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.End(StatusOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	return r.ID()
}

// TestUniqueIDNeverIssuesATakenID: a generated run id is never one the
// file holds (from an earlier open, given to Begin, imported) or one this
// Journal issued, also when the clock goes back; the file is asked only
// when the id's millisecond could hold such an id.
func TestUniqueIDNeverIssuesATakenID(t *testing.T) {
	var draws [][3]byte
	drawing(t, &draws)
	draws = [][3]byte{{0, 0, 1}}
	now := &manualClock{t: time.Date(2026, 12, 4, 13, 0, 0, 0, time.UTC)} // moved while the writer reads it
	path := filepath.Join(t.TempDir(), "j.db")
	j, _ := openCounting(t, path, now)
	first := begin(t, j, "")
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// An earlier open's id, in the same millisecond with the same draw.
	j, cs := openCounting(t, path, now)
	draws = [][3]byte{{0, 0, 1}}
	if id := begin(t, j, ""); id == first {
		t.Fatalf("issued %s again, an id the file held", id)
	}
	if cs.lookups == 0 {
		t.Fatal("an id in the file's latest millisecond was not looked up")
	}

	// A later millisecond: nothing to ask.
	now.Advance(time.Millisecond)
	cs.lookups = 0
	draws = [][3]byte{{0, 0, 3}}
	begin(t, j, "")
	if cs.lookups != 0 {
		t.Fatalf("an id above the floor was looked up %d times", cs.lookups)
	}

	// Ids given to Begin and imported raise the floor.
	now.Advance(time.Millisecond)
	draws = [][3]byte{{0, 0, 4}}
	given := now.Now().UTC().Format(idMillis) + "-000004"
	begin(t, j, given)
	if id := begin(t, j, ""); id == given {
		t.Fatalf("issued %s, an id given to Begin", id)
	}
	now.Advance(time.Millisecond)
	draws = [][3]byte{{0, 0, 5}}
	imported := now.Now().UTC().Format(idMillis) + "-000005"
	if err := j.Import(Dump{Run: RunMeta{ID: imported, Kind: "exec", Tool: "tools/t.ts", Status: StatusOK}}); err != nil {
		t.Fatal(err)
	}
	if id := begin(t, j, ""); id == imported {
		t.Fatalf("issued %s, an imported id", id)
	}

	// The clock goes back, then forward to a millisecond ids were issued
	// in above the floor: never the same id twice.
	now.Advance(time.Millisecond)
	draws = [][3]byte{{0, 0, 7}}
	again := begin(t, j, "") // queued, not yet committed
	now.Advance(time.Millisecond)
	begin(t, j, "")
	now.Advance(-time.Millisecond)
	draws = [][3]byte{{0, 0, 7}}
	if id := begin(t, j, ""); id == again {
		t.Fatalf("issued %s twice across a clock that went back", id)
	}

	// An id in another form than a generated one's, given or stored,
	// never holds the floor up.
	begin(t, j, "restored-abc")
	now.Advance(time.Hour)
	cs.lookups = 0
	begin(t, j, "")
	if cs.lookups != 0 {
		t.Fatalf("after an id of another form was given, a new id was looked up %d times", cs.lookups)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, cs = openCounting(t, path, now)
	now.Advance(time.Millisecond)
	begin(t, j, "")
	if cs.lookups != 0 {
		t.Fatalf("after an id of another form, new ids were looked up %d times", cs.lookups)
	}
}
