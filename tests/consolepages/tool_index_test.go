package consolepages_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
)

// nextLink is a page's rel="next" link.
var nextLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)

// recordRuns records n ended runs of tool at hash straight into the
// node's journal, from 8 goroutines (their writes share commits).
func recordRuns(t *testing.T, j *journal.Journal, tool, hash string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				run, err := j.Begin(journal.RunMeta{Kind: "exec", Tool: tool, Hash: hash})
				if err == nil {
					err = run.End(journal.StatusOK, nil, nil)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A tool's page lists every version the journal keeps, however many runs
// of other tools came after the old ones (it read only the newest 1,000
// runs before the journal indexed runs by tool), and pages a version's
// runs: every run once, newest first, with the page size asked for.
func TestToolPageEveryVersionPaged(t *testing.T) {
	rt, ts := node(t)
	greetTwoVersions(t, rt)
	j := rt.Journal()
	v1, v2 := transpile.Hash([]byte(greetV1)), transpile.Hash([]byte(greetV2))
	recordRuns(t, j, "tools/people/greet.ts", v2, 9)
	recordRuns(t, j, "tools/other.ts", "", 1100)

	b := login(t, ts, mint(rt, "reader", capability.Grant{Right: capability.Read, Scope: "tools/"}))
	code, page := b.get("/tools/tools/people/greet.ts")
	if code != http.StatusOK {
		t.Fatalf("the tool's page: %d\n%s", code, page)
	}
	for _, v := range []string{v1, v2} {
		if !strings.Contains(page, "?version="+v) {
			t.Errorf("the tool's page does not list version %s (its runs are older than the newest 1,000 runs)", v[:12])
		}
	}

	var want []string
	if err := j.EachRun(journal.RunQuery{}, func(m journal.RunMeta) error {
		if m.Tool == "tools/people/greet.ts" && m.Hash == v2 {
			want = append(want, m.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 2, 4, len(want), len(want) + 1} {
		got := pagedRuns(t, b, fmt.Sprintf("/tools/tools/people/greet.ts?version=%s&limit=%d", v2, limit), limit)
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: the version's pages list\n%v\nwant every run of it once, newest first\n%v", limit, got, want)
		}
	}
	if code, _ := b.get("/tools/tools/people/greet.ts?version=" + v2 + "&before=nosuchrun"); code != http.StatusBadRequest {
		t.Errorf("a cursor that names no run: %d, want 400", code)
	}
}

// pagedRuns follows a version's pages of runs from url, checking each
// holds at most limit runs, and returns the runs listed.
func pagedRuns(t *testing.T, b *browser, url string, limit int) []string {
	t.Helper()
	var ids []string
	for range 100 {
		code, page := b.get(url)
		if code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", url, code, page)
		}
		runs := page[strings.Index(page, `id="runs"`):]
		var n int
		for _, m := range regexp.MustCompile(`<td><a href="/runs/([^"]+)">`).FindAllStringSubmatch(runs, -1) {
			ids, n = append(ids, m[1]), n+1
		}
		if n > limit {
			t.Fatalf("%s lists %d runs, more than its limit %d", url, n, limit)
		}
		next := nextLink.FindStringSubmatch(runs)
		if next == nil {
			return ids
		}
		url, _, _ = strings.Cut(html.UnescapeString(next[1]), "#")
	}
	t.Fatal("the pages never ended")
	return nil
}

// The runs list filtered by one tool reads that tool's runs from the
// journal's index: a run of it older than the 2,000 runs a page may read
// is listed on the first page, not behind "Older" links.
func TestRunsListByToolReachesOldRuns(t *testing.T) {
	rt, ts := node(t)
	j := rt.Journal()
	recordRuns(t, j, "tools/people/greet.ts", "", 3)
	recordRuns(t, j, "tools/other.ts", "", 2100)

	b := login(t, ts, mint(rt, "reader", capability.Grant{Right: capability.Read, Scope: "tools/"}))
	code, page := b.get("/runs?tool=tools/people/greet.ts")
	if code != http.StatusOK {
		t.Fatalf("the filtered list: %d\n%s", code, page)
	}
	runs := page[strings.Index(page, `id="runs"`):]
	if n := len(regexp.MustCompile(`<td><a href="/runs/([^"]+)">`).FindAllString(runs, -1)); n != 3 {
		t.Errorf("the list of tools/people/greet.ts shows %d runs, want its 3 (older than 2,100 runs of another tool)\n%s", n, runs)
	}
	if strings.Contains(page, "follow “Older” to look further") {
		t.Errorf("the list of one tool's runs says it is partial")
	}
}
