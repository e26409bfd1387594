// Package telemetry is agentos' tracing: the OpenTelemetry GenAI spans its
// model calls, tool executions, agent runs and forges emit, and the OTLP
// export of every span the node makes (the agentos.* spans too).
//
// # Semantic conventions
//
// The GenAI spans follow the OpenTelemetry semantic conventions 1.41.0
// (SemconvVersion), the attribute keys of
// go.opentelemetry.io/otel/semconv/v1.41.0, the newest version of the otel
// module in go.mod that has the gen_ai attributes:
//
//	chat {model}           a model call (driver/llm): gen_ai.operation.name=chat,
//	                       gen_ai.provider.name, gen_ai.request.model,
//	                       gen_ai.request.max_tokens, gen_ai.response.model,
//	                       gen_ai.response.id, gen_ai.response.finish_reasons,
//	                       gen_ai.usage.input_tokens / output_tokens,
//	                       server.address, server.port, error.type
//	execute_tool {name}    a tool the model called (agent) or a tool run
//	                       (actors/executor): gen_ai.tool.name,
//	                       gen_ai.tool.call.id, gen_ai.tool.type
//	invoke_agent {name}    an agent run (agent) and a forge (actors/forge):
//	                       gen_ai.agent.name, gen_ai.agent.id
//
// IMPORTANT: content (prompts, completions, tool arguments and results) is
// recorded only when capture is on (CaptureContent): it MAY hold personal
// data. What is captured is what the model is sent and answers, so the pii
// section's tokens stand in for the personal data it detects. So is the
// text of a kernel tool's or a tool call's error (FailContent): it quotes
// what the caller sent; without capture a span has only its error.type.
//
// # Export
//
// Start makes the node's tracer provider when an OTLP exporter is
// configured (Config, the OTEL_EXPORTER_OTLP_* environment variables);
// otherwise it makes none and the node's spans go, as before, to the
// OpenTelemetry global tracer provider, a no-op unless the program set one.
package telemetry
