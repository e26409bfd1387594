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

// BenchmarkReadFile8MiB reads an 8 MiB file through the jail: past its
// first buffer (1 MiB), the cost of growing it.
func BenchmarkReadFile8MiB(b *testing.B) {
	j, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	if err := j.WriteFile("big.bin", make([]byte, 8<<20)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(8 << 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.ReadFile("big.bin"); err != nil {
			b.Fatal(err)
		}
	}
}
