package lazyre

import (
	"sync"
	"testing"
)

func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a+b$`)
	var wg sync.WaitGroup
	got := make(chan any, 8)
	for range 8 {
		wg.Go(func() { got <- re() })
	}
	wg.Wait()
	close(got)
	first := re()
	for r := range got {
		if r != first {
			t.Fatal("concurrent first calls returned different regexps")
		}
	}
	if !first.MatchString("aab") || first.MatchString("ba") {
		t.Fatal("the expression does not match as compiled")
	}
}

func TestNewPanicsOnFirstUseOfABadExpression(t *testing.T) {
	re := New(`(`) // no panic here
	defer func() {
		if recover() == nil {
			t.Fatal("a bad expression did not panic at its first use")
		}
	}()
	re()
}
