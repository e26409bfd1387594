package llm

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/lazyre"
)

// Configuration errors returned by New. Call errors (Complete, Device) are
// *driver.Error values instead; see the package documentation, "Failure".
var (
	// ErrNoModel: neither Config.Model nor AGENTOS_LLM_MODEL names a model.
	ErrNoModel = errors.New("llm: no model configured")
	// ErrBadBaseURL: the base URL is not an absolute http(s) URL.
	ErrBadBaseURL = errors.New("llm: bad base URL")
)

// Transient reports whether err, from a call of this driver (live or
// replayed from a journal), is one a later try MAY not meet: the server
// could not be reached, timed out, failed (5xx) or rate limited the call
// (429), that is driver.CodeUnavailable. The caller retries, never the
// client (see the package documentation).
func Transient(err error) bool {
	var e *driver.Error
	return errors.As(err, &e) && e.Code == driver.CodeUnavailable && !strings.Contains(e.Message, "the call was cancelled")
}

// RetryAfter is the wait a rate-limited err asked for (its Retry-After),
// 0 when it named none.
func RetryAfter(err error) time.Duration {
	var e *driver.Error
	if !errors.As(err, &e) {
		return 0
	}
	m := retryAfter().FindStringSubmatch(e.Message)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return time.Duration(n) * time.Second
}

var retryAfter = lazyre.New(`retry after (\d+) s`)

// contextPhrases are how OpenAI, vLLM, llama.cpp and Ollama say that a
// request does not fit the model's context window.
var contextPhrases = []string{
	"context_length_exceeded", "maximum context length", "context length", "context window",
	"exceeds the available context", "exceed_context_size", "too many tokens", "prompt is too long",
	"input is too long", "n_ctx",
}

// ContextExceeded reports whether err says the request did not fit the
// model's context window: a shorter request MAY succeed where a retry of
// the same one cannot.
func ContextExceeded(err error) bool {
	var e *driver.Error
	if !errors.As(err, &e) || e.Code != driver.CodeInvalid {
		return false
	}
	m := strings.ToLower(e.Message)
	for _, p := range contextPhrases {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}
