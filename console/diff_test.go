package console

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\n"
	new := "a\nb\nc\nD\ne\nf\ng\nh\ni\n"
	got := Diff(old, new, 1)
	var b strings.Builder
	for _, l := range got {
		b.WriteByte(byte(l.Op))
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	want := "@2 unchanged line(s)\n c\n-d\n+D\n e\n@2 unchanged line(s)\n h\n+i\n"
	if b.String() != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", b.String(), want)
	}
	if d := Diff("same\n", "same\n", 3); len(d) != 1 || d[0].Op != DiffSkip {
		t.Errorf("no change: %+v", d)
	}
	if d := Diff("", "x\n", 3); len(d) != 1 || d[0].Op != DiffAdd || d[0].NewLine != 1 {
		t.Errorf("from nothing: %+v", d)
	}
}
