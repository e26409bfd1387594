package console

// Config is the ui section of agentos.json: where `agentos serve` serves
// the console ('agentos serve --ui ADDR' and --ui-anonymous override it).
type Config struct {
	// Addr is the console's listen address, e.g. "127.0.0.1:8080"
	// (default: no console).
	Addr string `json:"addr,omitempty"`
	// Anonymous serves the console without a login, as the default
	// process. IMPORTANT: refused unless Addr is a loopback address.
	Anonymous bool `json:"anonymous,omitempty"`
}
