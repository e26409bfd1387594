package toolmeta

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"parseHTTPResponse", []string{"pars", "http", "respons"}},
		{"compound_interest", []string{"compound", "interest"}},
		{"send-an-email", []string{"send", "email"}},
		{"tools/math/fib", []string{"math", "fib"}},
		{"Calculates compound interest over years.", []string{"calcul", "compound", "interest", "year"}},
		{"compound interest calculator", []string{"compound", "interest", "calcul"}},
		{"Base64Encode sha256Sum", []string{"base64", "encod", "sha256", "sum"}},
		{"getURLs IOError", []string{"get", "url", "io", "error"}},
		{"The tool's inputs", []string{"input"}},
		{"Café 日本語", []string{"café", "日本語"}},
		{"  ,;  ", nil},
		{"a an the", nil},
	} {
		if got := tokenize(tc.in, nil); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// An Index drops a removed document from every term it held: searches no
// longer find it, the other documents' scores are what an index that never
// held it gives, and its path can be put again.
func TestIndexRemove(t *testing.T) {
	x := NewIndex("m")
	fresh := NewIndex("m")
	for i, d := range []string{"launch code of project zephyr", "zephyr rollout plan", "invoice currency check"} {
		tl := Tool{Path: fmt.Sprintf("m/%d", i), Description: d}
		x.Put(tl)
		if i != 0 {
			fresh.Put(tl)
		}
	}
	x.Remove("m/0")
	x.Remove("m/404") // absent: nothing
	if x.Len() != 2 {
		t.Fatalf("Len = %d after a removal", x.Len())
	}
	if hits := x.Search("launch code", 5); len(hits) != 0 {
		t.Fatalf("a removed document was found: %+v", hits)
	}
	got, want := x.Search("zephyr", 5), fresh.Search("zephyr", 5)
	if len(got) != 1 || len(want) != 1 || got[0].Path != "m/1" || got[0].Score != want[0].Score {
		t.Fatalf("after a removal %+v, an index that never held it %+v", got, want)
	}
	x.Put(Tool{Path: "m/0", Description: "launch code again"})
	if hits := x.Search("launch code", 5); len(hits) != 1 || hits[0].Description != "launch code again" {
		t.Fatalf("the path put again: %+v", hits)
	}
}

func BenchmarkExtract(b *testing.B) {
	src := []byte(compoundSrc)
	b.ReportAllocs()
	for b.Loop() {
		Extract(src)
	}
}

// BenchmarkExtractNewSource extracts a source that differs every
// iteration: a parse each time (BenchmarkExtract's one source is parsed
// once and then shared, see tsparse.Shared).
func BenchmarkExtractNewSource(b *testing.B) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		Extract([]byte(compoundSrc + "// " + strconv.Itoa(i) + "\n"))
	}
}

const compoundSrc = `/** Calculates compound interest over years. @tag finance */
export default function compoundInterest(args: { principal: number; rate: number; years: number }) {
  return args.principal * Math.pow(1 + args.rate, args.years);
}
`

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

// BenchmarkInvertedPut indexes 10,000 tools with descriptions and tags
// into a new index: what a node's boot does for every tool of its
// registry.
func BenchmarkInvertedPut(b *testing.B) {
	words := strings.Fields("parse fetch convert compute render validate merge split sort filter " +
		"JSON CSV YAML HTTP URL date time number string array matrix graph tree list map queue " +
		"Fibonacci prime factorial checksum encode decode compress hash sign verify")
	tools := make([]*Tool, 10000)
	for i := range tools {
		w := func(k int) string { return words[(i*7+k*13)%len(words)] }
		tools[i] = &Tool{Path: fmt.Sprintf("tools/g%02d/%sTo%s%d.ts", i%100, w(0), w(1), i), Name: fmt.Sprintf("%sTo%s%d", w(0), w(1), i),
			Description: fmt.Sprintf("Takes a %s and returns its %s as %s; the %s of the tool's %s, for %s.", w(2), w(3), w(4), w(5), w(6), w(7)),
			Tags:        []string{w(8), w(9)}}
	}
	b.ReportAllocs()
	for b.Loop() {
		x := NewInverted()
		for _, t := range tools {
			x.Put(t, "tools")
		}
	}
}
