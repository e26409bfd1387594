package host

import (
	"path/filepath"

	"github.com/agentos-run/agentos/memory"
)

// MemoryFile is where a tool root keeps its agents' long-term memory by
// default (memory.file): facts, lessons, preferences and paged-out turns,
// per agent name (package memory).
var MemoryFile = filepath.FromSlash(memory.DefaultFile)

// OpenMemory returns the memory store of the tool root (opened on first
// use; see memory.Open).
func (c Config) OpenMemory(root string) *memory.Store {
	f := c.Memory.File
	if f == "" {
		f = MemoryFile
	}
	return memory.Open(filepath.Join(root, f), memory.Options{MaxItems: c.Memory.MaxItems, MaxTextBytes: c.Memory.MaxTextBytes})
}
