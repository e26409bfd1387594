package console

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the work of Diff's table (old lines × new lines):
// beyond it the two versions are shown as all deleted, then all added.
const maxDiffCells = 4 << 20

// Diff returns the line diff of old and new (a longest common subsequence
// of lines), with context unchanged lines kept around each change and the
// rest folded into DiffSkip lines. Two sources too large to compare
// line by line (beyond maxDiffCells) are shown as a whole replacement.
func Diff(old, new string, context int) []DiffLine {
	a, b := splitLines(old), splitLines(new)
	ops := lcsOps(a, b)
	return fold(ops, context)
}

// splitLines splits s into lines without their newline ("" has none).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lcsOps is every line of a and b marked same, deleted or added.
func lcsOps(a, b []string) []DiffLine {
	// The common prefix and suffix need no table.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []DiffLine
	for i := range pre {
		out = append(out, DiffLine{Op: DiffSame, OldLine: i + 1, NewLine: i + 1, Text: a[i]})
	}
	out = append(out, middle(a[pre:len(a)-suf], b[pre:len(b)-suf], pre)...)
	for k := suf; k > 0; k-- {
		i, j := len(a)-k, len(b)-k
		out = append(out, DiffLine{Op: DiffSame, OldLine: i + 1, NewLine: j + 1, Text: a[i]})
	}
	return out
}

// middle diffs the changed middle parts, whose lines start after off.
func middle(a, b []string, off int) []DiffLine {
	var out []DiffLine
	if len(a)*len(b) > maxDiffCells {
		for i, l := range a {
			out = append(out, DiffLine{Op: DiffDel, OldLine: off + i + 1, Text: l})
		}
		for j, l := range b {
			out = append(out, DiffLine{Op: DiffAdd, NewLine: off + j + 1, Text: l})
		}
		return out
	}
	// lcs[i][j] is the length of the LCS of a[i:] and b[j:].
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, DiffLine{Op: DiffSame, OldLine: off + i + 1, NewLine: off + j + 1, Text: a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
			out = append(out, DiffLine{Op: DiffDel, OldLine: off + i + 1, Text: a[i]})
			i++
		default:
			out = append(out, DiffLine{Op: DiffAdd, NewLine: off + j + 1, Text: b[j]})
			j++
		}
	}
	return out
}

// fold keeps context unchanged lines around each change and replaces
// every longer run of unchanged lines by one DiffSkip line.
func fold(ops []DiffLine, context int) []DiffLine {
	keep := make([]bool, len(ops))
	for i, o := range ops {
		if o.Op == DiffSame {
			continue
		}
		for k := max(0, i-context); k <= min(len(ops)-1, i+context); k++ {
			keep[k] = true
		}
	}
	var out []DiffLine
	skipped := 0
	flush := func() {
		if skipped > 0 {
			out = append(out, DiffLine{Op: DiffSkip, Text: fmt.Sprintf("%d unchanged line(s)", skipped)})
			skipped = 0
		}
	}
	for i, o := range ops {
		if !keep[i] {
			skipped++
			continue
		}
		flush()
		out = append(out, o)
	}
	flush()
	return out
}
