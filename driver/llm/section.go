package llm

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentos-run/agentos/config"
)

// Section is the "llm" section of agentos.json: the model forge_tool and
// the agents ask, any OpenAI-compatible chat completions server (OpenAI,
// vLLM, Ollama, llama.cpp's server). The zero value takes the defaults
// below; DriverConfig is the Config it stands for.
type Section struct {
	BaseURL string `json:"base_url,omitempty"`
	Model   string `json:"model,omitempty"`
	// APIKeyEnv names the environment variable holding the key (default
	// AGENTOS_LLM_API_KEY). IMPORTANT: the key itself never goes in this
	// file.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// Prices in USD per million tokens, charged to the cost_usd quota.
	PriceInPerMTok  float64 `json:"price_in_per_mtok,omitempty"`
	PriceOutPerMTok float64 `json:"price_out_per_mtok,omitempty"`
	// ForgeAttempts bounds a forge's generate-check-test rounds. Default 3.
	ForgeAttempts int `json:"forge_attempts,omitempty"`
	// Timeout bounds one model request. Default 120 s; a CPU model
	// writing a tool and its tests MAY need more.
	Timeout config.Duration `json:"timeout,omitzero"`
	// MaxTokens caps each answer (sent as max_tokens). nil: 4096; 0: no
	// cap is sent (the server's default).
	MaxTokens *int `json:"max_tokens,omitempty"`
	// ParallelToolCalls is sent as parallel_tool_calls. nil: the server's
	// default.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// TextToolCalls reads tool calls the model writes as text (Hermes
	// <tool_call>, Mistral [TOOL_CALLS], Llama JSON). nil: true.
	TextToolCalls *bool `json:"text_tool_calls,omitempty"`
	// Retries is how many times a forge asks again after a transient
	// model error (unreachable, 5xx, 429, timeout). nil: 2.
	Retries *int `json:"retries,omitempty"`
}

// DefaultMaxTokens caps a model answer when llm.max_tokens is not set.
const DefaultMaxTokens = 4096

// DriverConfig is the driver's Config for this section, defaults applied.
func (c Section) DriverConfig() Config {
	return Config{BaseURL: c.BaseURL, Model: c.Model, APIKeyEnv: c.APIKeyEnv, PriceInPerMTok: c.PriceInPerMTok,
		PriceOutPerMTok: c.PriceOutPerMTok, Timeout: time.Duration(c.Timeout), MaxTokens: intOr(c.MaxTokens, DefaultMaxTokens),
		ParallelToolCalls: c.ParallelToolCalls, NoTextToolCalls: c.TextToolCalls != nil && !*c.TextToolCalls}
}

// ForgeRetries is llm.retries as forge.Options.ModelRetries (negative:
// none).
func (c Section) ForgeRetries() int {
	if c.Retries != nil && *c.Retries == 0 {
		return -1
	}
	return intOr(c.Retries, 0)
}

// Validate checks the section, naming the key that is wrong.
func (c Section) Validate() error {
	if err := CheckBaseURL(c.BaseURL); err != nil {
		return err
	}
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("llm.timeout %s is negative: give a duration such as \"5m\"", time.Duration(c.Timeout))
	case c.MaxTokens != nil && *c.MaxTokens < 0:
		return fmt.Errorf("llm.max_tokens %d is negative: give a positive cap, or 0 to send none", *c.MaxTokens)
	case c.Retries != nil && *c.Retries < 0:
		return fmt.Errorf("llm.retries %d is negative: give 0 (no retry) or more", *c.Retries)
	case c.ForgeAttempts < 0:
		return fmt.Errorf("llm.forge_attempts %d is negative", c.ForgeAttempts)
	}
	return nil
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// CheckBaseURL refuses an llm.base_url the model client could not use ("":
// the default): at load, not at the first model request.
func CheckBaseURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("llm.base_url %q is not an http(s) URL: write it like http://127.0.0.1:8080/v1", raw)
	case strings.HasSuffix(u.Host, ":"):
		return fmt.Errorf("llm.base_url %q has an empty port after the host's ':': give the port (e.g. http://127.0.0.1:8080/v1) or drop the ':'", raw)
	}
	return nil
}
