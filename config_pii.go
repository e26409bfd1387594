package agentos

// PIIConfig configures PII tokenization (docs/MCP.md): personal data in
// what drivers return is replaced by stable tokens before it can reach a
// model, and restored only on the way out to a driver allowed to see it.
type PIIConfig struct{}
