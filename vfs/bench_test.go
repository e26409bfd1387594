package vfs

import "testing"

// BenchmarkSandboxReadFile reads a tool three directories deep through
// /lib: the cost of resolving every component (issue 10 item 3).
func BenchmarkSandboxReadFile(b *testing.B) {
	dir := b.TempDir()
	j, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	if err := j.WriteFile("tools/math/deep/fib.ts", []byte("export default () => 1;\n")); err != nil {
		b.Fatal(err)
	}
	s := NewSandbox(j, SandboxConfig{})
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.ReadFile("/lib/math/deep/fib.ts"); err != nil {
			b.Fatal(err)
		}
	}
}
