package memory

import (
	"fmt"

	"github.com/agentos-run/agentos/config"
)

// DefaultFile is where a tool root keeps its agents' long-term memory
// when memory.file is not set, relative to the tool root.
const DefaultFile = config.StateDir + "/memory.db"

// Config is the "memory" section of agentos.json, the agents' memory (docs/MEMORY.md): context
// paging and long-term memory. The zero value: no paging, memory in
// .agentos/memory.db with the package defaults.
type Config struct {
	// WindowTokens is the model's context window in tokens: an agent's
	// conversation that would outgrow it has its oldest turns paged out to
	// the agent's memory (the recall tool brings them back). 0 (default):
	// no paging, a conversation larger than the model's window fails at
	// the model. AgentOptions.WindowTokens overrides it per agent.
	WindowTokens int `json:"window_tokens,omitempty"`
	// ReserveTokens is the part of the window kept free for the model's
	// answer. Default: an eighth of WindowTokens.
	ReserveTokens int `json:"reserve_tokens,omitempty"`
	// MaxItems bounds one agent's items; beyond it the oldest pages are
	// dropped, and with none left remember is refused. Default 100000.
	MaxItems int `json:"max_items,omitempty"`
	// MaxTextBytes bounds one item's text. Default 65536.
	MaxTextBytes int `json:"max_text_bytes,omitempty"`
	// RecallLessons is how many lessons (memory kind "lesson") relevant
	// to its task a named agent gets in its system prompt at the start of
	// a run, and a forge in its prompt for a spec. Default 4; -1: none.
	RecallLessons int `json:"recall_lessons,omitempty"`
	// Distill has every finished run of a named agent distilled into at
	// most three lessons (one more model call, journaled and charged)
	// kept in its memory. Default false.
	Distill bool `json:"distill,omitempty"`
	// File is the root-relative bbolt file of the memory (0600). It MUST
	// be under .agentos/ (tools cannot read it). Default
	// ".agentos/memory.db".
	File string `json:"file,omitempty"`
}

// Validate checks the section, naming the key that is wrong.
func (m Config) Validate() error {
	if m.WindowTokens < 0 || m.ReserveTokens < 0 || m.MaxItems < 0 || m.MaxTextBytes < 0 {
		return fmt.Errorf("memory values must not be negative (0 takes the default)")
	}
	if m.RecallLessons < -1 || m.RecallLessons > MaxLimit {
		return fmt.Errorf("memory.recall_lessons %d: use 1 to %d, 0 for the default (4) or -1 for none", m.RecallLessons, MaxLimit)
	}
	if err := m.validateWindow(); err != nil {
		return err
	}
	if m.File != "" {
		return validateFile(m.File)
	}
	return nil
}

// validateWindow checks the model's window and the tokens reserved of it.
func (m Config) validateWindow() error {
	if m.ReserveTokens > 0 && m.WindowTokens == 0 {
		return fmt.Errorf("memory.reserve_tokens is set but memory.window_tokens is not: set the model's window too (or remove reserve_tokens)")
	}
	if m.WindowTokens > 0 && m.ReserveTokens >= m.WindowTokens {
		return fmt.Errorf("memory.reserve_tokens %d leaves nothing of the %d-token window: reserve less (default: an eighth)", m.ReserveTokens, m.WindowTokens)
	}
	if m.WindowTokens > 0 && m.WindowTokens < 256 {
		return fmt.Errorf("memory.window_tokens %d is too small for a system prompt and one turn: use the model's window (e.g. 8192, 32768, 128000)", m.WindowTokens)
	}
	return nil
}

// validateFile checks memory.file f: inside the tool root, under the
// state directory tools cannot read.
func validateFile(f string) error {
	if !config.InsideRoot(f) {
		return fmt.Errorf("memory.file %q must be a file inside the tool root, written relative to it", f)
	}
	if !config.UnderStateDir(f) {
		return fmt.Errorf("memory.file %q is outside %s/, where tools could read every agent's memory: put it under %s/, e.g. %q", f, config.StateDir, config.StateDir, DefaultFile)
	}
	return nil
}

// Lessons is memory.recall_lessons resolved: 4 by default, 0 for none.
func (m Config) Lessons() int {
	switch {
	case m.RecallLessons < 0:
		return 0
	case m.RecallLessons == 0:
		return 4
	}
	return m.RecallLessons
}
