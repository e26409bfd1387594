package memory_test

import (
	"os"
	"testing"
)

var tempDirs []string

// osMkdirTemp makes a directory removed when the tests end (a benchmark's
// fixture shared across runs outlives b.TempDir).
func osMkdirTemp() (string, error) {
	d, err := os.MkdirTemp("", "agentos-memory-bench-")
	if err == nil {
		tempDirs = append(tempDirs, d)
	}
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
