package host

import (
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/check"
)

// ForgeReplayOptions are the settings a forge of the tool root at root
// runs under, for forge.Replay (what agentos replay uses): today's
// checker (allowed_imports), llm.forge_attempts and llm.retries,
// memory.recall_lessons, and the root's PII tokenizer. The caller MUST
// call closePII when the replay is over.
func (c Config) ForgeReplayOptions(root string) (opts forge.ReplayOptions, closePII func(), err error) {
	tok, m, err := c.OpenPII(root)
	if err != nil {
		return forge.ReplayOptions{}, nil, err
	}
	closePII = func() {}
	if m != nil {
		closePII = func() { _ = m.Close() }
	}
	return forge.ReplayOptions{
		Checker: check.New(c.CheckOptions()), MaxAttempts: c.LLM.ForgeAttempts, ModelRetries: c.LLM.ForgeRetries(),
		LessonsLimit: c.Memory.Lessons(), PII: tok,
	}, closePII, nil
}
