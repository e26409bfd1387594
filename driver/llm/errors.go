package llm

import "errors"

// Configuration errors returned by New. Call errors (Complete, Device) are
// *driver.Error values instead; see the package documentation, "Failure".
var (
	// ErrNoModel: neither Config.Model nor AGENTOS_LLM_MODEL names a model.
	ErrNoModel = errors.New("llm: no model configured")
	// ErrBadBaseURL: the base URL is not an absolute http(s) URL.
	ErrBadBaseURL = errors.New("llm: bad base URL")
)
