package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/memory"
)

// turn is an assistant message calling calls tools and their results of
// size bytes each.
func turn(i, calls, size int) []llm.Message {
	a := llm.Message{Role: llm.RoleAssistant}
	var out []llm.Message
	for c := range calls {
		id := fmt.Sprintf("t%d-%d", i, c)
		a.ToolCalls = append(a.ToolCalls, llm.ToolCall{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"tools/doc-%d-%d.txt"}`, i, c)})
		out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: fmt.Sprintf("turn %d call %d: %s", i, c, strings.Repeat("lorem ipsum ", size/12))})
	}
	return append([]llm.Message{a}, out...)
}

// Whatever the turns' sizes and shapes, fit keeps the system prompt and the
// task first, never leaves a tool result without its call, keeps the
// request within the budget, and pages every turn it drops, in order.
func TestFitInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var paged []Page
	pg, err := newPager(Paging{WindowTokens: 4096, PageOut: func(_ context.Context, pages []Page) ([]string, error) {
		ids := make([]string, len(pages))
		for i := range pages {
			paged = append(paged, pages[i])
			ids[i] = fmt.Sprint(len(paged))
		}
		return ids, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: "system"}, {Role: llm.RoleUser, Content: "the task"}}
	added := 0
	for i := range 300 {
		if r.IntN(5) == 0 {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("user note %d", i)})
			added++
		} else {
			msgs = append(msgs, turn(i, 1+r.IntN(3), 50+r.IntN(3000))...)
			added++
		}
		if msgs, err = pg.fit(context.Background(), msgs, nil); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if msgs[0].Content != "system" || msgs[1].Content != "the task" {
			t.Fatalf("turn %d: the pinned messages moved", i)
		}
		if est := pg.estimate(msgs, nil); est > pg.budget {
			t.Fatalf("turn %d: %d tokens over the budget of %d", i, est, pg.budget)
		}
		if pg.noted {
			checkNoteCount(t, i, msgs[2].Content, pg.paged)
		}
		for j, m := range msgs {
			if m.Role == llm.RoleTool && (j == 0 || msgs[j-1].Role != llm.RoleTool && len(msgs[j-1].ToolCalls) == 0) {
				t.Fatalf("turn %d: message %d is a tool result without its call", i, j)
			}
		}
	}
	if pg.paged != len(paged) || len(paged) < 100 {
		t.Fatalf("%d turns paged, %d pages stored", pg.paged, len(paged))
	}
	// Every turn is either still in context or paged, once.
	resident := 0
	for _, m := range msgs[3:] {
		if m.Role != llm.RoleTool {
			resident++
		}
	}
	if resident+len(paged) != added {
		t.Fatalf("%d turns resident + %d paged, %d added", resident, len(paged), added)
	}
	if note := msgs[2].Content; !strings.HasPrefix(note, "[context paging]") || len(note) > pg.budget {
		t.Fatalf("the note: %.200q (%d bytes)", note, len(note))
	}
}

// BenchmarkPagingPerTurn: the pager's cost per turn of a long conversation
// (a 32k-token window, turns of one call and a 2 KiB result): the estimate
// each turn, and every few turns the paging of the oldest turns into a real
// memory file (fsynced) or, for "nostore", nowhere.
func BenchmarkPagingPerTurn(b *testing.B) {
	for _, store := range []string{"file", "nostore"} {
		b.Run(store, func(b *testing.B) {
			pageOut := func(_ context.Context, pages []Page) ([]string, error) {
				ids := make([]string, len(pages))
				for i := range ids {
					ids[i] = "x"
				}
				return ids, nil
			}
			if store == "file" {
				s := memory.Open(filepath.Join(b.TempDir(), "memory.db"), memory.Options{MaxItems: 1 << 30})
				defer s.Close()
				pageOut = func(_ context.Context, pages []Page) ([]string, error) {
					items := make([]memory.Item, len(pages))
					for i, p := range pages {
						items[i] = memory.Item{Kind: memory.Page, Text: p.Text, Tags: p.Tools}
					}
					stored, _, err := s.RememberAll("bench", items)
					ids := make([]string, len(stored))
					for i := range stored {
						ids[i] = stored[i].ID
					}
					return ids, err
				}
			}
			pg, err := newPager(Paging{WindowTokens: 32768, PageOut: pageOut})
			if err != nil {
				b.Fatal(err)
			}
			msgs := []llm.Message{{Role: llm.RoleSystem, Content: SystemPrompt}, {Role: llm.RoleUser, Content: "the task"}}
			turns := make([][]llm.Message, 64)
			for i := range turns {
				turns[i] = turn(i, 1, 2048)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				msgs = append(msgs, turns[i%len(turns)]...)
				if msgs, err = pg.fit(context.Background(), msgs, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(pg.paged)/float64(b.N), "pages/turn")
		})
	}
}

// checkNoteCount: the paging note accounts for every paged turn once: the
// folded line's count plus the page lines is the number of turns paged.
func checkNoteCount(t *testing.T, turn int, note string, paged int) {
	t.Helper()
	folded, lines := 0, 0
	for _, l := range strings.Split(note, "\n") {
		if _, err := fmt.Sscanf(l, "- %d older pages", &folded); err == nil {
			continue
		}
		if strings.HasPrefix(l, "- page ") {
			lines++
		}
	}
	if folded+lines != paged {
		t.Fatalf("turn %d: the note counts %d folded + %d pages, %d turns were paged", turn, folded, lines, paged)
	}
}
