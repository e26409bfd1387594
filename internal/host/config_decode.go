package host

import "github.com/agentos-run/agentos/config"

// ConfigDoc is the page that documents every key of agentos.json; every
// configuration error points to it.
const ConfigDoc = config.Doc

// ConfigError is a mistake in agentos.json: where it is (line and column,
// 1-based, 0 when unknown), under which key, and what was expected (see
// config.Error).
type ConfigError = config.Error
