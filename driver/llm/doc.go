// Package llm is the LLM driver: a client for the OpenAI-compatible chat
// completions protocol with tool calls, built on the official SDK
// (github.com/openai/openai-go/v3). It works with OpenAI itself and with the
// servers that speak the same protocol: vLLM, Ollama, llama.cpp's server.
//
// # Configuration
//
// Config names the server (BaseURL, e.g. http://127.0.0.1:8080/v1), the
// model and the environment variable that holds the API key. Zero values
// mean defaults: AGENTOS_LLM_BASE_URL (else https://api.openai.com/v1),
// AGENTOS_LLM_MODEL and AGENTOS_LLM_API_KEY. New fails when no model is
// configured, naming the variables to set.
//
// IMPORTANT: the API key is read from the environment only. It MUST NOT
// appear in a log line, an error, a journal entry or a Response; every error
// this package returns is scrubbed of it. The SDK's own OPENAI_* environment
// variables (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_CUSTOM_HEADERS, ...) are
// NOT read: the driver's configuration is Config and nothing else.
//
// # The device
//
// Client.Device exposes the client as a driver.Device named Driver ("llm")
// with one operation, "complete": the request is a Request as JSON, the
// response a Response as JSON. Registered in a driver.Mux, every model call
// goes through the run's driver.Host chain, so the journal middleware records
// it and replays it offline without calling (or paying for) the model again.
//
// IMPORTANT: the client MUST NOT retry on its own. A retry is a second,
// billed call the journal would not see; a failed call is returned as a
// *driver.Error and the caller (the agent loop, the forge) decides whether to
// try again. Complete sends exactly one HTTP request per call.
//
// # Failure
//
// Errors are *driver.Error with these codes:
//
//   - driver.CodeUnavailable: the server could not be reached (connection
//     refused, DNS, timeout), answered 5xx, or answered 429 (rate limited;
//     the message carries the server's Retry-After). Trying later MAY work.
//   - driver.CodeInvalid: the request is wrong (a bad Request, an unknown
//     role, invalid tool parameters JSON) or the server answered another 4xx
//     (401 a missing or wrong key, 404 an unknown model or a base URL without
//     /v1, 400 a request the model refuses). Trying again MUST NOT help.
//   - driver.CodeIO: the server answered 2xx with something that is not a
//     chat completion (no choices, undecodable JSON).
//
// # Cost
//
// Usage carries the token counts the server reported and, when
// Config.PriceInPerMTok / PriceOutPerMTok are set, the call's cost in USD:
// prompt tokens times the input price plus completion tokens times the
// output price, per million tokens.
//
// # Testing
//
// Package llmtest serves a scripted model over real HTTP on loopback, for
// tests and demos that need a deterministic model.
package llm
