package registry

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/vfs"
)

// searchRegistry is a registry of the corpus, plus extra tools.
func searchRegistry(t *testing.T, extra map[string]string) *Registry {
	t.Helper()
	rt := newRoot(t)
	for p, src := range corpus {
		rt.write(p, src)
	}
	for p, src := range extra {
		rt.write(p, src)
	}
	return rt.open(rt.options())
}

func TestSearchRanking(t *testing.T) {
	r := searchRegistry(t, map[string]string{
		"tools/math/fibonacci.ts":   "/** Returns a sequence. */\nexport default function f() {}\n",
		"tools/math/sequences.ts":   "/** Lists Fibonacci and Lucas numbers up to a bound. */\nexport default function s() {}\n",
		"tools/finance/compound.ts": compoundSrc,
	})
	for _, tc := range []struct {
		query   string
		first   string
		atLeast float64 // the first hit's score
		atMost  float64
	}{
		// A name match ranks above a description match.
		{"fibonacci", "tools/math/fibonacci.ts", 0.85, 1},
		{"compound interest calculator", "tools/finance/compound.ts", 0.85, 1},
		{"calculate the compound interest", "tools/finance/compound.ts", 0.85, 1},
		{"send email", "tools/comms/sendEmail.ts", 0.85, 1},
		{"parse a CSV file", "tools/data/parse_csv.ts", 0.5, 0.85}, // "file" is not covered
		{"return on investment", "tools/docs/roi.ts", 0.85, 1},
		{"monthly loan payment", "tools/finance/loan_payment.ts", 0.85, 1},
		// A tag alone.
		{"finance", "tools/finance/compound.ts", 0.85, 1},
		// Half the query is unknown to every tool: no reuse.
		{"compound interest blockchain ledger", "tools/finance/compound.ts", 0.2, 0.6},
	} {
		hits := r.Search(tc.query, 3)
		if len(hits) == 0 {
			t.Errorf("%q: no hits", tc.query)
			continue
		}
		if hits[0].Path != tc.first || hits[0].Score < tc.atLeast || hits[0].Score > tc.atMost {
			t.Errorf("%q: first hit %s scores %v; want %s in [%v, %v]", tc.query, hits[0].Path, hits[0].Score, tc.first, tc.atLeast, tc.atMost)
		}
		for i, h := range hits {
			if h.Score < 0 || h.Score > 1 {
				t.Errorf("%q: score %v out of 0..1", tc.query, h.Score)
			}
			if i > 0 && h.Score > hits[i-1].Score {
				t.Errorf("%q: hits not ordered by score: %v after %v", tc.query, h.Score, hits[i-1].Score)
			}
		}
	}
	for _, q := range []string{"", "   ", "the of and", "zzzz qqqq"} {
		if hits := r.Search(q, 10); hits == nil || len(hits) != 0 {
			t.Errorf("Search(%q) = %#v, want an empty slice", q, hits)
		}
	}
}

func TestSearchLimitAndTies(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	for i := range 30 {
		src := fmt.Sprintf("/** Converts a temperature, variant %d. */\nexport default function c() { return %d; }\n", i, i)
		if _, err := r.Register(fmt.Sprintf("tools/conv/c%02d.ts", i), []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(r.Search("temperature", 0)); n != DefaultLimit {
		t.Errorf("limit 0 gave %d hits", n)
	}
	if n := len(r.Search("temperature", 3)); n != 3 {
		t.Errorf("limit 3 gave %d hits", n)
	}
	if n := len(r.Search("temperature", 100)); n != 30 {
		t.Errorf("limit 100 gave %d hits", n)
	}
	// Equal scores: the most used first, then by path.
	r.Used("tools/conv/c17.ts")
	small, big := r.Search("converts temperature", 5), r.Search("converts temperature", 100)
	if small[0].Path != "tools/conv/c17.ts" || small[1].Path != "tools/conv/c00.ts" {
		t.Errorf("ties: %s, %s", small[0].Path, small[1].Path)
	}
	for i := range small {
		if small[i].Path != big[i].Path || small[i].Score != big[i].Score {
			t.Errorf("the top 5 of limit 5 and limit 100 differ at %d: %s %s", i, small[i].Path, big[i].Path)
		}
	}
}

// synthetic returns n tools with realistic names, tags, paths and
// descriptions, deterministically.
func synthetic(n int) []*Tool {
	verbs := strings.Fields(`calculate parse convert fetch send validate format generate compute extract merge sort filter
		summarize normalize resize encode decode compress upload download schedule translate classify detect render
		aggregate export import sync notify estimate forecast reconcile match rank search index score clean split`)
	objects := strings.Fields(`invoice email csv json date currency interest loan user report image thumbnail pdf order
		payment customer address phone url html markdown xml table row column chart metric log event ticket issue
		calendar meeting weather forecast temperature distance route shipment inventory product price discount tax
		salary employee transaction account balance budget expense receipt contract document signature password token
		session cookie header request response queue message notification sms slack webhook timestamp timezone
		duration percentage ratio average median variance histogram vector matrix graph node edge tree string text
		word sentence paragraph language sentiment keyword tag category label score rating review comment post
		article headline title summary abstract citation reference isbn barcode qr color palette font icon video
		audio transcript subtitle frame pixel coordinate polygon map region country city zip postcode`)
	tags := strings.Fields(`finance data text media geo time comms math web security commerce hr legal ops analytics`)
	fillers := strings.Fields(`given from into with for using by of the a an each every all selected recent monthly daily
		annual raw cleaned structured plain optional default`)
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]*Tool, n)
	for i := range n {
		v, o, o2 := pick(verbs), pick(objects), pick(objects)
		name := fmt.Sprintf("%s%s%s%d", v, strings.ToUpper(o[:1]), o[1:], i)
		var d strings.Builder
		fmt.Fprintf(&d, "%ss the %s %s of %s %s", strings.ToUpper(v[:1])+v[1:], pick(fillers), o, pick(fillers), o2)
		for range rng.IntN(12) {
			fmt.Fprintf(&d, " %s", pick(append(fillers, objects...)))
		}
		d.WriteString(" and returns the result.")
		tg := []string{pick(tags)}
		if rng.IntN(3) == 0 {
			tg = append(tg, pick(tags))
		}
		out[i] = &Tool{
			Path: "tools/" + tg[0] + "/" + name + ".ts", Name: name, Description: d.String(), Tags: tg,
			Hash: fmt.Sprintf("%064x", i), Version: 1, Created: now, Updated: now,
		}
	}
	return out
}

// BenchmarkSearch10k searches a registry of 10,000 synthetic tools.
func BenchmarkSearch10k(b *testing.B) {
	r := benchRegistry(b, 10_000)
	queries := []string{
		"compound interest calculator", "parse csv file into rows", "send an email notification to a customer",
		"convert currency amount", "resize image thumbnail", "validate json document", "weather forecast for a city",
		"summarize text paragraph", "monthly budget report", "detect sentiment of a review",
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		r.Search(queries[i%len(queries)], 10)
		i++
	}
}

// BenchmarkSearch10kParallel is BenchmarkSearch10k from every P at once.
func BenchmarkSearch10kParallel(b *testing.B) {
	r := benchRegistry(b, 10_000)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Search("send an email notification to a customer", 10)
		}
	})
}

// benchRegistry fills a registry's memory with n synthetic tools (their
// persistence is not what is measured).
func benchRegistry(b *testing.B, n int) *Registry {
	b.Helper()
	dir := b.TempDir()
	rt := &root{dir: dir, warn: &warnings{}}
	j, err := vfs.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	rt.jail = j
	r, err := Open(j, rt.options())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	r.mu.Lock()
	for _, t := range synthetic(n) {
		r.tools[t.Path] = t
		r.idx.Put(t, r.toolsDir)
	}
	r.mu.Unlock()
	return r
}
