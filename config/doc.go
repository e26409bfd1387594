// Package config reads agentos.json, a tool root's configuration: once,
// with every mistake placed at its line and column (Error), and with
// every section checked by the package that uses it.
//
// Protocol. A section of the file is declared in the package that uses it,
// next to its use: its struct with JSON tags (the zero value is the
// documented default), and a Validate method saying what is wrong and
// what to write instead (executor.LimitsConfig, repo.Config,
// driver.FetchConfig, driver.Secrets, driver.SQLConfig, capability.Config
// and capability.Quota, agent.Config, tournament.Config, cluster.Config,
// memory.Config, llm.Section, pii.Config, mcpdriver.ServerConfig,
// mcpserver.Config, approval.Config, gate.Config, journal.Retention,
// telemetry.Config). The composition root (internal/host)
// lists the sections in one struct, host.Config, the file's schema; Load
// decodes the file into it and calls its Validate, which validates the
// sections in the order docs/CONFIG.md presents them. Values that several
// sections share (Duration, and the checks of names and paths such as
// EnvName and UnderStateDir) are here; this package imports no section.
//
// Lifecycle. Load reads the file once and decodes it once: Decode walks
// the document token by token along the schema's type, checking each key
// and the type of each value at its position and decoding each value
// straight into its field; nothing decodes the file a second time.
//
// Failure. A missing file is the defaults. A syntax error, a truncated
// file, an unknown key (with the nearest known key suggested), a key set
// twice or a value of the wrong type is an *Error naming the file, line,
// column and key; a value a section refuses is an error naming the file
// and the key. Every error points to docs/CONFIG.md, where every key is
// documented (a test keeps the page complete).
package config
