package toolmeta

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var (
	update = flag.Bool("update", false, "rewrite "+goldenFile+" with today's Extract")
	corpus = flag.String("corpus", "", "with -update: a directory of .ts sources to add to the golden corpus")
)

// goldenFile holds the extraction of every tool source the repository's
// code and tests hold (the string literals of its Go files and its .ts
// files, collected once), each also cut at a half and at two thirds (broken
// sources: ERROR and MISSING nodes). It was written by the extractor that
// used go-tree-sitter's node API, before the flat tree replaced it: the
// flat-tree extractor must reproduce it byte for byte.
const goldenFile = "testdata/extract_golden.json"

// goldenCase is one source and what Extract found in it.
type goldenCase struct {
	Src         string   `json:"src"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Parameters is Meta.Parameters as its exact bytes.
	Parameters string `json:"parameters,omitempty"`
	Declared   bool   `json:"declared,omitempty"`
}

func extractCase(src string) goldenCase {
	m := Extract([]byte(src))
	return goldenCase{Src: src, Description: m.Description, Tags: m.Tags, Parameters: string(m.Parameters), Declared: m.declared}
}

// brokenCuts are the prefixes of src the golden file also holds.
func brokenCuts(src string) []string {
	var out []string
	for _, n := range []int{len(src) / 2, len(src) * 2 / 3} {
		for n > 0 && !utf8.RuneStart(src[n]) {
			n--
		}
		if n > 0 {
			out = append(out, src[:n])
		}
	}
	return out
}

func TestExtractGolden(t *testing.T) {
	var cases []goldenCase
	if b, err := os.ReadFile(goldenFile); err == nil {
		if err := json.Unmarshal(b, &cases); err != nil {
			t.Fatalf("%s: %v", goldenFile, err)
		}
	} else if !*update {
		t.Fatal(err)
	}
	if *update {
		writeGolden(t, cases)
		return
	}
	if len(cases) < 100 {
		t.Fatalf("%s holds %d cases: the corpus is missing", goldenFile, len(cases))
	}
	for i, want := range cases {
		got := extractCase(want.Src)
		if got.Description != want.Description || !slices.Equal(got.Tags, want.Tags) ||
			got.Parameters != want.Parameters || got.Declared != want.Declared {
			t.Errorf("case %d: Extract(%q)\n got %+v\nwant %+v", i, want.Src, got, want)
		}
		var params string // ParamsOf's schema, marshalled as Extract does
		if p := ParamsOf([]byte(want.Src)); p != nil {
			b, _ := json.Marshal(p.s)
			params = string(b)
		}
		if wantParams := map[bool]string{true: want.Parameters}[want.Declared]; params != wantParams {
			t.Errorf("case %d: ParamsOf(%q) = %s, want %s", i, want.Src, params, wantParams)
		}
	}
}

// writeGolden recomputes every case (and adds the -corpus sources with
// their cuts), deduplicated, in a stable order.
func writeGolden(t *testing.T, cases []goldenCase) {
	srcs := map[string]bool{}
	for _, c := range cases {
		srcs[c.Src] = true
	}
	if *corpus != "" {
		files, err := filepath.Glob(filepath.Join(*corpus, "*.ts"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if s := string(b); utf8.ValidString(s) { // JSON strings hold only UTF-8
				srcs[s] = true
				for _, cut := range brokenCuts(s) {
					srcs[cut] = true
				}
			}
		}
	}
	keys := make([]string, 0, len(srcs))
	for s := range srcs {
		keys = append(keys, s)
	}
	slices.Sort(keys)
	out := make([]goldenCase, len(keys))
	for i, s := range keys {
		out[i] = extractCase(s)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d cases to %s", len(out), goldenFile)
}
