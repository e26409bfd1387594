package agentos

import (
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/mcpserver"
)

// The errors a Runtime's verbs answer, to be tested with errors.Is. A
// configuration error is a *ConfigError (errors.As): it names the key, its
// line and column, and what was expected.
var (
	// ErrNoModel: RunAgent or Spawn without a model configured (llm in
	// agentos.json, or AGENTOS_LLM_BASE_URL and AGENTOS_LLM_MODEL).
	ErrNoModel = host.ErrNoModel
	// ErrNotRestorable: Restore of a snapshot already restored, or whose
	// process still runs.
	ErrNotRestorable = kernelclient.ErrNotRestorable
	// ErrClosed: MCPServer after Close.
	ErrClosed = mcpserver.ErrClosed
)

// ConfigError is an error in agentos.json: the key, its position and what
// was expected (every key is documented in docs/CONFIG.md).
type ConfigError = host.ConfigError
