package memory_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/memory"
)

func open(t *testing.T, path string, opts memory.Options) *memory.Store {
	t.Helper()
	s := memory.Open(path, opts)
	t.Cleanup(func() { s.Close() })
	return s
}

func remember(t *testing.T, s *memory.Store, agent string, kind memory.Kind, text string, tags ...string) memory.Item {
	t.Helper()
	it, _, err := s.Remember(agent, memory.Item{Kind: kind, Text: text, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// Items persist in the file: a store reopened on it recalls them, ranked by
// relevance, and a forgotten item stays forgotten.
func TestRememberRecallForgetAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.db")
	s := memory.Open(path, memory.Options{})
	launch := remember(t, s, "alice", memory.Fact, "The launch code for project Zephyr is 7419.", "zephyr")
	remember(t, s, "alice", memory.Lesson, "Check the invoice currency before summing amounts.")
	remember(t, s, "alice", memory.Preference, "The user wants answers in French.")
	gone := remember(t, s, "alice", memory.Fact, "The staging database is called stg-eu-1.")
	remember(t, s, "bob", memory.Fact, "Bob's launch code is 0000.")
	if err := s.Forget("alice", gone.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the memory file: %v, %v: want mode 0600", fi, err)
	}

	s = open(t, path, memory.Options{})
	hits, err := s.Recall("alice", "zephyr launch code", memory.RecallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].ID != launch.ID || !strings.Contains(hits[0].Text, "7419") || hits[0].Score <= 0 {
		t.Fatalf("recall = %+v: want alice's launch code first", hits)
	}
	for _, h := range hits {
		if h.Agent != "alice" || strings.Contains(h.Text, "0000") {
			t.Fatalf("alice recalled %+v: another agent's item", h)
		}
	}
	if hits, _ := s.Recall("alice", "staging database", memory.RecallOptions{}); len(hits) != 0 {
		t.Fatalf("a forgotten item came back: %+v", hits)
	}
	if hits, _ := s.Recall("alice", "invoice currency", memory.RecallOptions{Kinds: []memory.Kind{memory.Fact}}); len(hits) != 0 {
		t.Fatalf("a kind filter let a lesson through: %+v", hits)
	}
	items, err := s.List("alice", "")
	if err != nil || len(items) != 3 {
		t.Fatalf("list = %+v, %v: want 3 items", items, err)
	}
	agents, err := s.Agents()
	if err != nil || len(agents) != 2 || agents[0].Name != "alice" || agents[0].ByKind[memory.Fact] != 1 || agents[1].Items != 1 {
		t.Fatalf("agents = %+v, %v", agents, err)
	}
	// New items get fresh ids after a reopen.
	again := remember(t, s, "alice", memory.Fact, "Zephyr ships on Friday.")
	if again.ID == launch.ID || again.ID == gone.ID {
		t.Fatalf("id %s reused", again.ID)
	}
}

// The same text (case and spaces aside) is kept once per kind.
func TestRememberDeduplicates(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "m.db"), memory.Options{})
	a := remember(t, s, "a", memory.Lesson, "Always  bind SQL parameters.")
	b, added, err := s.Remember("a", memory.Item{Kind: memory.Lesson, Text: "always bind sql PARAMETERS."})
	if err != nil || added || b.ID != a.ID {
		t.Fatalf("duplicate: %+v added=%v %v", b, added, err)
	}
	out, adds, err := s.RememberAll("a", []memory.Item{{Kind: memory.Page, Text: "turn one"}, {Kind: memory.Page, Text: "TURN one"}})
	if err != nil || !adds[0] || adds[1] || out[0].ID != out[1].ID || out[0].ID == "" {
		t.Fatalf("a duplicate within one batch: %+v %v %v", out, adds, err)
	}
}

// Invalid requests say what is wrong.
func TestRememberRefusals(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "m.db"), memory.Options{MaxTextBytes: 10})
	for _, c := range []struct {
		agent string
		it    memory.Item
		want  string
	}{
		{"", memory.Item{Text: "x"}, "agent name is empty"},
		{"a", memory.Item{Text: "  "}, "empty"},
		{"a", memory.Item{Text: "far too long a text"}, "over the limit"},
		{"a", memory.Item{Text: "ok", Kind: "rumour"}, "use one of fact"},
	} {
		_, _, err := s.Remember(c.agent, c.it)
		if !errors.Is(err, memory.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Remember(%q, %+v) = %v: want ErrInvalid saying %q", c.agent, c.it, err, c.want)
		}
	}
	if err := s.Forget("a", "42"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("forgetting nothing: %v", err)
	}
	if _, err := s.Recall("a", " ", memory.RecallOptions{}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("an empty query: %v", err)
	}
}

// At MaxItems the oldest pages make room; with no page left, Remember is
// refused with ErrFull.
func TestMaxItemsDropsOldestPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s := memory.Open(path, memory.Options{MaxItems: 3})
	p1 := remember(t, s, "a", memory.Page, "page one about apples")
	remember(t, s, "a", memory.Page, "page two about pears")
	remember(t, s, "a", memory.Fact, "fact about plums")
	remember(t, s, "a", memory.Fact, "fact about cherries") // drops page one
	if _, err := s.Get("a", p1.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("the oldest page is still there: %v", err)
	}
	remember(t, s, "a", memory.Fact, "fact about figs") // drops page two
	if _, _, err := s.Remember("a", memory.Item{Text: "fact about dates"}); !errors.Is(err, memory.ErrFull) {
		t.Fatalf("a full memory without pages: %v", err)
	}
	s.Close()
	s = open(t, path, memory.Options{MaxItems: 3})
	items, _ := s.List("a", "")
	if len(items) != 3 {
		t.Fatalf("after reopen: %+v", items)
	}
}

// A batch refused with ErrFull takes no page off the list: the page it could
// not use is still there to make room for a later, smaller batch.
func TestFullBatchKeepsPages(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "m.db"), memory.Options{MaxItems: 3})
	p := remember(t, s, "a", memory.Page, "page about apples")
	remember(t, s, "a", memory.Fact, "fact about plums")
	remember(t, s, "a", memory.Fact, "fact about cherries")
	two := []memory.Item{{Kind: memory.Fact, Text: "fact about figs"}, {Kind: memory.Fact, Text: "fact about dates"}}
	if _, _, err := s.RememberAll("a", two); !errors.Is(err, memory.ErrFull) {
		t.Fatalf("two facts for one page of room: %v", err)
	}
	if _, err := s.Get("a", p.ID); err != nil {
		t.Fatalf("the refused batch dropped the page: %v", err)
	}
	remember(t, s, "a", memory.Fact, "fact about figs") // drops the page
	if _, err := s.Get("a", p.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("the page did not make room: %v", err)
	}
}

// An ephemeral agent's memory never reaches the file and ends with Drop.
func TestEphemeralAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s := open(t, path, memory.Options{})
	name := memory.EphemeralPrefix + "17"
	remember(t, s, name, memory.Page, "a page of an unnamed process")
	if hits, _ := s.Recall(name, "unnamed process", memory.RecallOptions{}); len(hits) != 1 {
		t.Fatalf("recall = %+v", hits)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an ephemeral memory opened the file: %v", err)
	}
	s.Drop(name)
	if hits, _ := s.Recall(name, "unnamed process", memory.RecallOptions{}); len(hits) != 0 {
		t.Fatalf("after Drop: %+v", hits)
	}
}

// A file written by a newer agentos is refused, not misread.
func TestNewerFormatRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s := memory.Open(path, memory.Options{})
	remember(t, s, "a", memory.Fact, "x marks the spot")
	s.Close()
	if err := memory.SetFormatForTest(path, memory.FormatVersion+1); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, memory.Options{})
	if _, err := s.List("a", ""); !errors.Is(err, memory.ErrFormat) {
		t.Fatalf("a newer file: %v", err)
	}
}

// Recall ranks by BM25F: the page that holds the rare query term wins over
// pages that share only common words.
func TestRecallRanksRareTerms(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "m.db"), memory.Options{NoSync: true})
	var items []memory.Item
	for i := range 200 {
		items = append(items, memory.Item{Kind: memory.Page, Text: fmt.Sprintf("result: order %d shipped to the warehouse on time", i)})
	}
	items = append(items, memory.Item{Kind: memory.Page, Text: "result: order 77 was returned: the customer found a scratch"})
	if _, _, err := s.RememberAll("a", items); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Recall("a", "which order was returned with a scratch", memory.RecallOptions{Limit: 3})
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Text, "scratch") {
		t.Fatalf("recall = %+v, %v", hits, err)
	}
}

// Concurrent remembers, recalls, forgets and lists of several agents keep
// the store consistent (run with -race).
func TestConcurrentUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s := memory.Open(path, memory.Options{NoSync: true})
	done := make(chan error)
	for g := range 6 {
		go func() {
			agent := fmt.Sprintf("agent-%d", g%3)
			var err error
			for i := range 40 {
				var it memory.Item
				if it, _, err = s.Remember(agent, memory.Item{Text: fmt.Sprintf("goroutine %d note %d about topic%d", g, i, i%5)}); err != nil {
					break
				}
				if _, err = s.Recall(agent, fmt.Sprintf("topic%d", i%5), memory.RecallOptions{}); err != nil {
					break
				}
				if i%4 == 0 {
					if err = s.Forget(agent, it.ID); err != nil {
						break
					}
				}
				if _, err = s.List(agent, ""); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 6 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Agents(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path, memory.Options{})
	for a := range 3 {
		items, err := s.List(fmt.Sprintf("agent-%d", a), "")
		if err != nil || len(items) != 2*30 {
			t.Fatalf("agent-%d after reopen: %d items, %v; want 60", a, len(items), err)
		}
	}
}

// Recall matches the items' text and tags, never their ids: a query "2"
// does not find item 2 (whose text holds no 2).
func TestRecallDoesNotMatchIDs(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "memory.db"), memory.Options{NoSync: true})
	remember(t, s, "alice", memory.Fact, "The sky is blue.")
	two := remember(t, s, "alice", memory.Fact, "Grass is green.")
	if two.ID != "2" {
		t.Fatalf("the second item's id is %q", two.ID)
	}
	hits, err := s.Recall("alice", "2", memory.RecallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Fatalf("recall of \"2\" found %+v: it matched an id", hits)
	}
}

// Remembering only what is already there (a resumed agent paging the same
// turns again) writes nothing to the file.
func TestRememberDuplicatesWritesNothing(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "memory.db"), memory.Options{NoSync: true})
	items := []memory.Item{{Kind: memory.Page, Text: "turn one"}, {Kind: memory.Page, Text: "turn two"}}
	if _, _, err := s.RememberAll("alice", items); err != nil {
		t.Fatal(err)
	}
	before := memory.WriteTxForTest(s)
	if before == 0 {
		t.Fatal("no write counted for the first batch")
	}
	stored, added, err := s.RememberAll("alice", items)
	if err != nil || added[0] || added[1] || stored[0].ID != "1" || stored[1].ID != "2" {
		t.Fatalf("%+v %v %v", stored, added, err)
	}
	if after := memory.WriteTxForTest(s); after != before {
		t.Fatalf("%d page writes after remembering duplicates only, %d before", after, before)
	}
}

// A page is stored once per run: the same turn paged again in its run is
// the same page (a resume), in another run it is another page.
func TestPagesDedupWithinARunOnly(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "memory.db"), memory.Options{NoSync: true})
	a, _, err := s.Remember("alice", memory.Item{Kind: memory.Page, Text: "assistant called list_files", Run: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	again, added, err := s.Remember("alice", memory.Item{Kind: memory.Page, Text: "assistant called list_files", Run: "r1"})
	if err != nil || added || again.ID != a.ID {
		t.Fatalf("the same page in its run: %+v added=%v %v", again, added, err)
	}
	other, added, err := s.Remember("alice", memory.Item{Kind: memory.Page, Text: "assistant called list_files", Run: "r2"})
	if err != nil || !added || other.ID == a.ID || other.Run != "r2" {
		t.Fatalf("the same text paged by another run: %+v added=%v %v", other, added, err)
	}
}
