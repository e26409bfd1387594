package pii

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchRows is a SQL answer of 100 rows: {columns, rows} as the sql
// driver answers, with an e-mail, a phone and a name in each row (or none).
func benchRows(personal bool) []byte {
	rows := make([]map[string]any, 100)
	for i := range rows {
		if personal {
			rows[i] = map[string]any{"id": i, "name": "Ada Lovelace", "email": fmt.Sprintf("user%d@example.com", i), "phone": fmt.Sprintf("+44 20 7946 %04d", i), "note": "a plain note about the order"}
		} else {
			rows[i] = map[string]any{"id": i, "name": fmt.Sprintf("item %d", i), "sku": fmt.Sprintf("SKU-%d", i), "price": 9.99, "note": "a plain note about the order"}
		}
	}
	b, _ := json.Marshal(map[string]any{"columns": []string{"id", "name", "email", "phone", "note"}, "rows": rows})
	return b
}

func benchTokenizer(b *testing.B) *Tokenizer {
	names := make([]string, 0, 1000)
	for i := range 1000 {
		names = append(names, fmt.Sprintf("Person%d Surname%d", i, i))
	}
	names = append(names, "Ada Lovelace")
	return newT(b, Options{Detect: []string{Email, Phone}, Names: names})
}

// BenchmarkJSONNothingToTokenize: the common case, a response without
// personal data, MUST NOT allocate.
func BenchmarkJSONNothingToTokenize(b *testing.B) {
	tk := benchTokenizer(b)
	doc := benchRows(false)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.JSON(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONPersonalRows: 100 rows of 3 values each, already in the
// map (the steady state).
func BenchmarkJSONPersonalRows(b *testing.B) {
	tk := benchTokenizer(b)
	doc := benchRows(true)
	if _, err := tk.JSON(doc); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.JSON(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRestore(b *testing.B) {
	tk := benchTokenizer(b)
	doc, err := tk.JSON(benchRows(true))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.Restore(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNothingToTokenizeAllocatesNothing holds the benchmark's promise.
func TestNothingToTokenizeAllocatesNothing(t *testing.T) {
	tk := newT(t, Options{Detect: []string{Email, Phone}, Names: []string{"Ada Lovelace"}})
	doc := benchRows(false)
	if n := testing.AllocsPerRun(20, func() { _, _ = tk.JSON(doc) }); n != 0 {
		t.Fatalf("JSON allocated %v times on a document with nothing to tokenize", n)
	}
	if n := testing.AllocsPerRun(20, func() { _, _ = tk.Restore(doc) }); n != 0 {
		t.Fatalf("Restore allocated %v times on a document without tokens", n)
	}
	if !strings.Contains(string(doc), "SKU-") {
		t.Fatal("bad fixture")
	}
}

// BenchmarkJSONNewValuesBolt: 100 rows never seen before, recorded in a
// bbolt map (one durable write per document).
func BenchmarkJSONNewValuesBolt(b *testing.B) {
	m := OpenBoltMap(b.TempDir() + "/pii.db")
	defer m.Close()
	tk := newT(b, Options{Detect: []string{Email, Phone}, Map: m})
	docs := make([][]byte, 0, 64)
	for i := range cap(docs) {
		rows := make([]string, 100)
		for r := range rows {
			rows[r] = fmt.Sprintf(`{"email":"u%d.%d@example.com","phone":"+44 20 7%03d %04d"}`, i, r, i, r)
		}
		docs = append(docs, []byte("["+strings.Join(rows, ",")+"]"))
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n == len(docs) { // later rounds find the values known
			b.StopTimer()
			tk = newT(b, Options{Detect: []string{Email, Phone}, Map: NewMemMap()})
			tk.mapping = m
			n = 0
			b.StartTimer()
		}
		if _, err := tk.JSON(docs[n]); err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// BenchmarkEchoJSON: the echo check of a call that restored three values,
// on a 100-row answer that does not hold them (the common case).
func BenchmarkEchoJSON(b *testing.B) {
	doc := benchRows(true)
	e := Echo{pairs: []Pair{{Token: "PII_EMAIL_000000000001", Value: "grace@navy.example"}, {Token: "PII_PHONE_000000000002", Value: "+1 555 123 4567"}, {Token: "PII_NAME_000000000003", Value: "Grace Hopper"}}}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if out := e.JSON(doc); len(out) != len(doc) {
			b.Fatal("changed a document without the values")
		}
	}
}
