package telemetry

import (
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// SemconvVersion is the version of the OpenTelemetry semantic conventions
// the GenAI spans follow; SchemaURL is its schema, set on their tracers.
const (
	SemconvVersion = "1.41.0"
	SchemaURL      = semconv.SchemaURL
)

// The GenAI attribute keys agentos records, named once here (semconv
// 1.41.0).
var (
	OperationName      = semconv.GenAIOperationNameKey
	ProviderName       = semconv.GenAIProviderNameKey
	RequestModel       = semconv.GenAIRequestModelKey
	RequestMaxTokens   = semconv.GenAIRequestMaxTokensKey
	RequestTemperature = semconv.GenAIRequestTemperatureKey
	ResponseModel      = semconv.GenAIResponseModelKey
	ResponseID         = semconv.GenAIResponseIDKey
	ResponseFinish     = semconv.GenAIResponseFinishReasonsKey
	UsageInputTokens   = semconv.GenAIUsageInputTokensKey
	UsageOutputTokens  = semconv.GenAIUsageOutputTokensKey
	InputMessages      = semconv.GenAIInputMessagesKey
	OutputMessages     = semconv.GenAIOutputMessagesKey
	ToolDefinitions    = semconv.GenAIToolDefinitionsKey
	ToolName           = semconv.GenAIToolNameKey
	ToolCallID         = semconv.GenAIToolCallIDKey
	ToolType           = semconv.GenAIToolTypeKey
	ToolCallArguments  = semconv.GenAIToolCallArgumentsKey
	ToolCallResult     = semconv.GenAIToolCallResultKey
	AgentName          = semconv.GenAIAgentNameKey
	AgentID            = semconv.GenAIAgentIDKey
	ConversationID     = semconv.GenAIConversationIDKey
	ErrorType          = semconv.ErrorTypeKey
	ServerAddress      = semconv.ServerAddressKey
	ServerPort         = semconv.ServerPortKey
	SystemInstructions = semconv.GenAISystemInstructionsKey
)

// Values of the GenAI attributes, and the environment variable that turns
// content capture on.
const (
	OperationChat       = "chat"
	OperationTool       = "execute_tool"
	OperationAgent      = "invoke_agent"
	ToolTypeFunction    = "function"  // a kernel tool the model called
	ToolTypeExtension   = "extension" // a tool run in the sandbox
	ErrorTypeOther      = "_OTHER"
	EnvCaptureContent   = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
	defaultServiceName  = "agentos"
	providerOpenAI      = "openai"
	maxAttrContentBytes = 64 << 10
)

// Tracer returns the tracer of scope (an instrumenting package's import
// path) from tp (nil: the OpenTelemetry global), with the GenAI schema.
func Tracer(tp trace.TracerProvider, scope string) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(scope, trace.WithSchemaURL(SchemaURL))
}

// ToolSpan returns the start options of an "execute_tool {name}" span:
// name is gen_ai.tool.name, callID (may be empty) gen_ai.tool.call.id,
// typ gen_ai.tool.type.
func ToolSpan(name, callID, typ string, extra ...attribute.KeyValue) (string, []trace.SpanStartOption) {
	attrs := []attribute.KeyValue{OperationName.String(OperationTool), ToolName.String(name), ToolType.String(typ)}
	if callID != "" {
		attrs = append(attrs, ToolCallID.String(callID))
	}
	return OperationTool + " " + name, []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(append(attrs, extra...)...)}
}

// AgentSpan returns the start options of an "invoke_agent {name}" span of
// an agent running in this process: name is gen_ai.agent.name, id
// gen_ai.agent.id (the journal run id).
func AgentSpan(name, id string, extra ...attribute.KeyValue) (string, []trace.SpanStartOption) {
	attrs := []attribute.KeyValue{OperationName.String(OperationAgent), AgentName.String(name)}
	if id != "" {
		attrs = append(attrs, AgentID.String(id))
	}
	return OperationAgent + " " + name, []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(append(attrs, extra...)...)}
}

// Fail marks span failed with err: error.type is typ (ErrorTypeOther when
// empty) and the status is Error with err's message. A nil err is a no-op.
func Fail(span trace.Span, typ string, err error) {
	if err == nil {
		return
	}
	if typ == "" {
		typ = ErrorTypeOther
	}
	span.SetAttributes(ErrorType.String(typ))
	span.SetStatus(codes.Error, err.Error())
}

// FailContent marks span failed with err as Fail does when capture is on.
// With capture off, err's text (which can quote what a caller sent: a
// path, a query, personal data) is not recorded: the status says only
// the stable typ, and no exception event is added.
func FailContent(span trace.Span, typ string, err error, capture bool) {
	if err == nil {
		return
	}
	if capture {
		span.RecordError(err)
		Fail(span, typ, err)
		return
	}
	if typ == "" {
		typ = ErrorTypeOther
	}
	span.SetAttributes(ErrorType.String(typ))
	span.SetStatus(codes.Error, typ)
}

// CaptureContent reports whether GenAI content (messages, tool arguments
// and results) is recorded on spans: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
// when it is set to a boolean ("true", "false"), else configured.
func CaptureContent(configured bool) bool {
	if v, ok := os.LookupEnv(EnvCaptureContent); ok {
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b
		}
	}
	return configured
}

// Content clips s to what a span attribute carries (64 KiB): a backend
// drops larger attributes, or the whole span.
func Content(s string) string {
	if len(s) <= maxAttrContentBytes {
		return s
	}
	return s[:maxAttrContentBytes] + "…[truncated " + strconv.Itoa(len(s)-maxAttrContentBytes) + " bytes]"
}

// ProviderOf returns the gen_ai.provider.name of an OpenAI-compatible server
// at host: the provider when host is one of the known APIs, else "openai",
// the flavor of the API agentos speaks (server.address tells the server).
func ProviderOf(host string) string {
	host = strings.ToLower(host)
	for suffix, p := range map[string]string{
		"api.openai.com": "openai", ".openai.azure.com": "azure.ai.openai", "api.groq.com": "groq",
		"api.deepseek.com": "deepseek", "api.mistral.ai": "mistral_ai", "api.x.ai": "x_ai",
		"api.perplexity.ai": "perplexity", "generativelanguage.googleapis.com": "gcp.gemini", "api.anthropic.com": "anthropic",
	} {
		if host == strings.TrimPrefix(suffix, ".") || strings.HasSuffix(host, suffix) && strings.HasPrefix(suffix, ".") {
			return p
		}
	}
	return providerOpenAI
}
