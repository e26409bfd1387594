package binform_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/agentos-run/agentos/internal/binform"
)

var errBad = errors.New("not a record")

// record writes one of each thing a Reader reads.
func record() []byte {
	b := binform.AppendString(nil, "tools/a.ts")
	b = binform.AppendBytes(b, []byte{0, 1, 2})
	b = binform.AppendStrings(b, []string{"x", "", "yz"})
	b = binform.AppendStrings(b, nil)
	b = append(b, 7)
	b = binary.AppendUvarint(b, math.MaxUint64)
	for _, v := range []int64{0, -1, 1, math.MinInt64, math.MaxInt64} {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// read reads what record writes.
func read(r *binform.Reader) []any {
	out := []any{r.String(), r.Raw(r.Count(1)), r.Strings(), r.Strings(), r.Byte(), r.Uint(math.MaxUint64)}
	for range 5 {
		out = append(out, r.Varint())
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	r := binform.NewReader(string(record()), 0, errBad)
	got := read(r)
	want := []any{"tools/a.ts", "\x00\x01\x02", []string{"x", "", "yz"}, []string(nil), byte(7), uint64(math.MaxUint64),
		int64(0), int64(-1), int64(1), int64(math.MinInt64), int64(math.MaxInt64)}
	if fmt.Sprint(got) != fmt.Sprint(want) || r.Err() != nil || r.Left() != 0 {
		t.Fatalf("read %v (err %v, %d left), want %v", got, r.Err(), r.Left(), want)
	}
}

// TestDamageFailsAndSticks: every truncation of a record fails with the
// Reader's error, at the first read that runs out, and later reads return
// zero values without changing it.
func TestDamageFailsAndSticks(t *testing.T) {
	b := record()
	for n := range len(b) {
		r := binform.NewReader(string(b[:n]), 0, errBad)
		read(r)
		first := r.Err()
		if !errors.Is(first, errBad) {
			t.Fatalf("cut at %d: err %v, want one wrapping %v", n, first, errBad)
		}
		if r.String() != "" || r.Byte() != 0 || r.Err() != first {
			t.Fatalf("cut at %d: reads after the error changed it or returned data", n)
		}
	}
}

// TestCountIsBoundedByTheBytesLeft: a count larger than the bytes left
// could hold fails instead of sizing an allocation.
func TestCountIsBoundedByTheBytesLeft(t *testing.T) {
	b := binary.AppendUvarint(nil, 5)
	b = append(b, "abcdefghij"...) // 10 bytes: 5 items of 2 fit, of 3 do not
	if r := binform.NewReader(string(b), 0, errBad); r.Count(2) != 5 || r.Err() != nil {
		t.Fatalf("5 items of 2 bytes in 10: %v", r.Err())
	}
	if r := binform.NewReader(string(b), 0, errBad); r.Count(3) != 0 || !errors.Is(r.Err(), errBad) {
		t.Fatalf("5 items of 3 bytes in 10 were accepted: %v", r.Err())
	}
	if r := binform.NewReader("x", 2, errBad); !errors.Is(r.Err(), errBad) {
		t.Fatal("a start past the end was accepted")
	}
}

func FuzzReader(f *testing.F) {
	f.Add(record())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := binform.NewReader(string(b), 0, errBad)
		read(r)
		if r.Err() != nil && !errors.Is(r.Err(), errBad) {
			t.Fatalf("an error not wrapping the Reader's: %v", r.Err())
		}
		if r.Left() < 0 || r.Pos() > len(b) {
			t.Fatalf("read past the end: pos %d of %d", r.Pos(), len(b))
		}
	})
}

func Example() {
	b := binform.AppendString(nil, "tools/fib.ts")
	b = binform.AppendStrings(b, []string{"math", "series"})
	r := binform.NewReader(string(b), 0, errors.New("not a tool record"))
	path, tags := r.String(), r.Strings()
	if err := r.Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(path, slices.Contains(tags, "math"))
	// Output: tools/fib.ts true
}
