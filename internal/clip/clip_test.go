package clip

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	if got := Text("tools/a.ts"); got != "tools/a.ts" {
		t.Fatalf("short value changed: %q", got)
	}
	long := strings.Repeat("a", 60<<20)
	got := Text(long)
	if len(got) > Max+32 || !strings.HasPrefix(got, strings.Repeat("a", Max)) || !strings.HasSuffix(got, "… (62914560 bytes)") {
		t.Fatalf("long value: %d bytes, ends %q", len(got), got[len(got)-30:])
	}
	// A cut never splits a multi-byte character.
	multi := strings.Repeat("é", 300)
	if got := N(multi, 101); !strings.HasPrefix(got, strings.Repeat("é", 50)+"…") {
		t.Fatalf("utf-8 cut: %q", got)
	}
}

func TestError(t *testing.T) {
	base := &fs.PathError{Op: "open", Path: strings.Repeat("p", 1<<20), Err: fs.ErrNotExist}
	err := Error(base, 512)
	if len(err.Error()) > 600 || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("clipped error: %d bytes, Is=%v", len(err.Error()), errors.Is(err, fs.ErrNotExist))
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatal("errors.As lost the path error")
	}
	small := errors.New("small")
	if Error(small, 512) != small || Error(nil, 512) != nil {
		t.Fatal("short errors must be returned as they are")
	}
}
