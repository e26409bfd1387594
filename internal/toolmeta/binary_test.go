package toolmeta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentos-run/agentos/internal/binform"
)

// builtIndex indexes tools, then removes every fifth and gives usage to
// every third: an index with free slots and usage, as a registry's is.
func builtIndex(tools []*Tool) (*Inverted, map[string]int) {
	x := NewInverted()
	usage := map[string]int{}
	for i, t := range tools {
		x.Put(t, "tools")
		usage[t.Path] = 0
		if i%3 == 0 {
			x.SetUsage(t.Path, i)
			usage[t.Path] = i
		}
	}
	for i, t := range tools {
		if i%5 == 0 {
			x.Remove(t.Path)
			delete(usage, t.Path)
		}
	}
	return x, usage
}

var binaryQueries = []string{"calculate invoice", "parse csv date", "send email notification", "finance", "tree graph node", "weather forecast temperature", "xyzzy"}

// TestInvertedBinaryRoundTrip: a decoded index answers every search as the
// one encoded, holds its invariants, encodes to the same bytes, and keeps
// working as an index (Put, Remove) exactly as the original does.
func TestInvertedBinaryRoundTrip(t *testing.T) {
	tools := synthetic(500)
	x, usage := builtIndex(tools)
	b := x.AppendBinary(nil)
	y, err := DecodeInverted(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if bad := y.Verify(usage); len(bad) > 0 {
		t.Fatalf("decoded index: %v", bad)
	}
	if again := y.AppendBinary(nil); !bytes.Equal(again, b) {
		t.Fatal("the decoded index encodes to other bytes")
	}
	same := func(when string) {
		t.Helper()
		for _, q := range binaryQueries {
			hx := x.Hits(q, 20, func(p string) Tool { return Tool{Path: p} })
			hy := y.Hits(q, 20, func(p string) Tool { return Tool{Path: p} })
			if !reflect.DeepEqual(hx, hy) {
				t.Fatalf("%s: search %q:\nencoded %v\ndecoded %v", when, q, hx, hy)
			}
		}
	}
	same("decoded")
	for i, tl := range tools[:100] { // the same changes to both
		c := *tl
		c.Description = fmt.Sprintf("renamed tool number %d that computes weather", i)
		for _, z := range []*Inverted{x, y} {
			switch i % 3 {
			case 0:
				z.Put(&c, "tools")
			case 1:
				z.Remove(tl.Path)
			default:
				z.Put(tl, "tools")
			}
		}
	}
	same("after the same changes")
	if x.Len() != y.Len() {
		t.Fatalf("Len %d and %d", x.Len(), y.Len())
	}
}

// TestDecodeInvertedRefusesDamage: every truncation, and a flipped byte
// anywhere, is refused with ErrBadInverted or decodes to a valid index;
// nothing panics.
func TestDecodeInvertedRefusesDamage(t *testing.T) {
	x, _ := builtIndex(synthetic(40))
	b := x.AppendBinary(nil)
	for n := range len(b) {
		if _, err := DecodeInverted(string(b[:n])); !errors.Is(err, ErrBadInverted) {
			t.Fatalf("truncated to %d of %d bytes: %v", n, len(b), err)
		}
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x5a
		if y, err := DecodeInverted(string(c)); err == nil {
			y.Hits("calculate", 5, func(p string) Tool { return Tool{Path: p} })
		} else if !errors.Is(err, ErrBadInverted) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, err := DecodeInverted(string(append(bytes.Clone(b), 0))); !errors.Is(err, ErrBadInverted) {
		t.Fatalf("a byte more: %v", err)
	}
}

func FuzzDecodeInverted(f *testing.F) {
	x, _ := builtIndex(synthetic(8))
	f.Add(x.AppendBinary(nil))
	f.Add([]byte(invertedMagic + "\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		y, err := DecodeInverted(string(b))
		if err != nil {
			return
		}
		y.Hits("calculate invoice", 5, func(p string) Tool { return Tool{Path: p} })
		y.Put(&Tool{Path: "tools/z.ts", Name: "z", Description: "calculate"}, "tools")
		for p := range y.byPath {
			y.Remove(p)
		}
	})
}

// BenchmarkDecodeInverted decodes the index of 10,000 tools: what a later
// boot of a registry does instead of BenchmarkInvertedPut.
func BenchmarkDecodeInverted(b *testing.B) {
	x := NewInverted()
	for _, t := range synthetic(10_000) {
		x.Put(t, "tools")
	}
	bin := x.AppendBinary(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(bin)))
	for b.Loop() {
		if _, err := DecodeInverted(string(bin)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutSynthetic10k is BenchmarkDecodeInverted's comparison: the
// same 10,000 tools indexed one by one.
func BenchmarkPutSynthetic10k(b *testing.B) {
	tools := synthetic(10_000)
	b.ReportAllocs()
	for b.Loop() {
		x := NewInverted()
		for _, t := range tools {
			x.Put(t, "tools")
		}
	}
}

// craftedIndex is an index one document of which lists "alpha" twice
// while "beta" posts to it too: its counts agree, but removing the
// document would leave beta pointing at a dead one.
func craftedIndex(by string) []byte {
	b := binform.AppendString([]byte(invertedMagic), by)
	b = append(b, 0)
	b = binary.AppendUvarint(b, 2)
	b = binform.AppendString(binform.AppendString(b, "alpha"), "beta")
	b = binary.AppendUvarint(b, 1)
	b = binform.AppendString(b, "tools/x.ts")
	b = append(b, 1, 0, 0, 0, 0, 2, 0, 0) // lens, usage, terms {alpha, alpha}
	for range 2 {
		b = append(b, 1, 1, 1, 0, 0, 0) // alpha, then beta: doc 0
	}
	return b
}

// TestDecodeInvertedRefusesInconsistentPostings: postings that are not
// exactly the terms their documents list, and an index built by another
// tokenizer, are refused (found by review: the first made a registry's
// Search panic after a Remove).
func TestDecodeInvertedRefusesInconsistentPostings(t *testing.T) {
	if _, err := DecodeInverted(string(craftedIndex(indexer))); !errors.Is(err, ErrBadInverted) {
		t.Errorf("a doc listing a term twice, another posting to it: %v", err)
	}
	swapped := append(binform.AppendString([]byte(invertedMagic), indexer), 0)
	swapped = binary.AppendUvarint(swapped, 2)
	swapped = binform.AppendString(binform.AppendString(swapped, "alpha"), "beta")
	swapped = binary.AppendUvarint(swapped, 2)
	swapped = append(binform.AppendString(swapped, "tools/a.ts"), 1, 0, 0, 0, 0, 1, 0) // lists alpha
	swapped = append(binform.AppendString(swapped, "tools/b.ts"), 1, 0, 0, 0, 0, 1, 1) // lists beta
	swapped = append(swapped, 1, 2, 1, 0, 0, 0)                                        // alpha posts to doc 1
	swapped = append(swapped, 1, 1, 1, 0, 0, 0)                                        // beta posts to doc 0
	if _, err := DecodeInverted(string(swapped)); !errors.Is(err, ErrBadInverted) {
		t.Errorf("each doc's posting under the other's term: %v", err)
	}
	x, _ := builtIndex(synthetic(20))
	good := x.AppendBinary(nil)
	other := append(binform.AppendString([]byte(invertedMagic), "0 another tokenizer"), good[len(invertedMagic)+len(binform.AppendString(nil, indexer)):]...)
	if _, err := DecodeInverted(string(other)); !errors.Is(err, ErrBadInverted) {
		t.Errorf("an index of another indexer: %v", err)
	}
	if _, err := DecodeInverted(string(good)); err != nil {
		t.Fatalf("the good index: %v", err)
	}
}
