package repo

import (
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestGeometricSplit: repack merges the smallest packs until the packs
// left grow by a factor of 2 at least, so the pack of earlier merges is
// not rewritten at every repack.
func TestGeometricSplit(t *testing.T) {
	small := func(n, w int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = w
		}
		return out
	}
	for _, c := range []struct {
		name    string
		weights []int // ascending
		want    int
	}{
		{"seventeen small packs beside a clone", append(small(17, 6), 10006), 17},
		{"an earlier merge too small to keep", append(small(16, 6), 102, 10006), 17},
		{"an earlier merge large enough to keep", append(small(16, 6), 198, 10006), 16},
		{"a progression already", []int{1, 2, 4, 8, 16}, 0},
		{"one pack", []int{5}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			sorted := make([]plumbing.Hash, len(c.weights))
			weight := map[plumbing.Hash]uint32{}
			for i, w := range c.weights {
				sorted[i] = plumbing.ComputeHash(plumbing.BlobObject, []byte(fmt.Sprint(i)))
				weight[sorted[i]] = uint32(w)
			}
			if got := geometricSplit(sorted, weight); got != c.want {
				t.Fatalf("split = %d, want %d", got, c.want)
			}
		})
	}
}
