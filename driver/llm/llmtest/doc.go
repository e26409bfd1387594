// Package llmtest serves a scripted model: a real HTTP server on loopback
// that speaks the OpenAI chat completions wire format (non-streaming) and
// answers each request with the next Step of its script. Tests use it to
// drive package llm — and anything built on it, such as an agent loop or the
// forge — without a real model; demos use it to run offline.
//
// # Protocol
//
// The server answers POST {URL()}/chat/completions, where URL() ends in
// /v1. Each request MUST be valid JSON with a model and at least one
// message, and, when the server was created WithKey, MUST carry
// "Authorization: Bearer <key>"; otherwise it answers 400 (or 401) with an
// OpenAI-style error body and records the problem in Err. A valid request
// is answered with the next Step: a text answer (finish_reason "stop"), tool
// calls (finish_reason "tool_calls"), or an HTTP error when Step.Status is
// set. Once the script is exhausted it answers 500 with a message saying so.
//
// IMPORTANT: every request to the chat endpoint counts in Requests, valid or
// not, so a test can prove that a request was not sent twice (for example,
// that a replayed run did not call the model again).
//
// # Failure
//
// Err returns the first problem: a Step's Check failure, an invalid request,
// a request past the end of the script. Tests MUST check Err (or use
// t.Cleanup to do so) since the driver may turn a server-side failure into
// an ordinary error answer.
//
// # Lifecycle
//
// NewServer starts listening at once on 127.0.0.1 on a free port; Close
// stops it and waits for its goroutine. Server is safe for concurrent use.
package llmtest
