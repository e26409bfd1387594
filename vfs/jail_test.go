package vfs

import (
	"errors"
	"testing"
)

func TestRemove(t *testing.T) {
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.WriteFile("tools/a.ts", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := j.Remove("tools/a.ts"); err != nil {
		t.Fatal(err)
	}
	if _, err := j.ReadFile("tools/a.ts"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after Remove: %v", err)
	}
	if err := j.Remove("../x"); !errors.Is(err, ErrSecurity) {
		t.Fatalf("Remove outside: %v", err)
	}
}
