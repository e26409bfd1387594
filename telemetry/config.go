package telemetry

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Exporter values of Config.Exporter.
const (
	ExporterAuto = ""     // OTLP when an endpoint is configured (here or in the environment)
	ExporterOTLP = "otlp" // OTLP, to the endpoint configured or the exporter's default (localhost)
	ExporterNone = "none" // no exporter, whatever the environment says
)

// Protocol values of Config.Protocol (and OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// Environment variables read here; the exporters and the SDK read the
// other OTEL_* variables themselves (headers, timeout, certificates,
// compression, OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvServiceName    = "OTEL_SERVICE_NAME"
	EnvSampler        = "OTEL_TRACES_SAMPLER"
)

// Config is the "tracing" section of agentos.json: where the node exports
// its spans over OTLP, and whether GenAI content is recorded. The zero
// value exports nothing unless the OTEL_EXPORTER_OTLP_* environment
// variables name an endpoint, and records no content.
//
// IMPORTANT: the OTEL_* environment variables win over this section (an
// operator's environment overrides the tool root's file), as the
// OpenTelemetry specification has them win over defaults.
type Config struct {
	// Exporter is "" (OTLP when an endpoint is set here or in
	// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
	// "otlp" (always, to the exporter's default localhost endpoint when none
	// is set) or "none" (never). OTEL_TRACES_EXPORTER=none and
	// OTEL_SDK_DISABLED=true turn it off too.
	Exporter string `json:"exporter,omitempty"`
	// Protocol is "http/protobuf" (the default, port 4318) or "grpc" (port
	// 4317). OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
	// OTEL_EXPORTER_OTLP_PROTOCOL win.
	Protocol string `json:"protocol,omitempty"`
	// Endpoint is the collector's base URL, e.g. "http://127.0.0.1:4318"
	// (HTTP: /v1/traces is appended when the URL has no path) or
	// "http://127.0.0.1:4317" (gRPC); "http" sends in clear text, "https"
	// over TLS. The environment's endpoint wins.
	Endpoint string `json:"endpoint,omitempty"`
	// ServiceName is the service.name of the node's spans. Default
	// OTEL_SERVICE_NAME, else "agentos".
	ServiceName string `json:"service_name,omitempty"`
	// SampleRatio, between 0 and 1, keeps that share of the traces that
	// start on this node (parent-based: a trace begun elsewhere keeps its
	// decision). 0: every trace (OTEL_TRACES_SAMPLER wins when set).
	SampleRatio float64 `json:"sample_ratio,omitempty"`
	// CaptureMessageContent records prompts, completions, tool arguments
	// and tool results on the GenAI spans (gen_ai.input.messages,
	// gen_ai.output.messages, gen_ai.tool.call.arguments,
	// gen_ai.tool.call.result). Default off: prompts MAY hold personal
	// data. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true or
	// false wins.
	CaptureMessageContent bool `json:"capture_message_content,omitempty"`
}

// Validate checks c, saying what is wrong and what to write instead.
func (c Config) Validate() error {
	switch c.Exporter {
	case ExporterAuto, ExporterOTLP, ExporterNone:
	default:
		return fmt.Errorf("tracing.exporter %q is not known: write \"otlp\" (export over OTLP), \"none\", or leave it out (OTLP when an endpoint is configured)", c.Exporter)
	}
	switch c.Protocol {
	case "", ProtocolGRPC, ProtocolHTTP:
	default:
		return fmt.Errorf("tracing.protocol %q is not known: write \"http/protobuf\" (port 4318) or \"grpc\" (port 4317)", c.Protocol)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return fmt.Errorf("tracing.endpoint %q is not an http(s) URL without credentials such as \"http://127.0.0.1:4318\" (put headers such as API keys in OTEL_EXPORTER_OTLP_HEADERS)", c.Endpoint)
		}
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("tracing.sample_ratio %g is not between 0 and 1: write e.g. 0.1 to keep a tenth of the traces (0 keeps every trace)", c.SampleRatio)
	}
	return nil
}

// Enabled reports whether c, under the environment, exports spans.
func (c Config) Enabled() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(EnvSDKDisabled)), "true") {
		return false
	}
	switch strings.TrimSpace(os.Getenv(EnvTracesExporter)) {
	case "none":
		return false
	case "otlp":
		return c.Exporter != ExporterNone
	}
	switch c.Exporter {
	case ExporterNone:
		return false
	case ExporterOTLP:
		return true
	}
	return c.Endpoint != "" || os.Getenv(EnvEndpoint) != "" || os.Getenv(EnvTracesEndpoint) != ""
}

// protocol is the OTLP protocol in force: the environment's, else c's,
// else http/protobuf (the specification's default).
func (c Config) protocol() (string, error) {
	for _, env := range []string{EnvTracesProtocol, EnvProtocol} {
		v := strings.TrimSpace(os.Getenv(env))
		switch v {
		case "":
			continue
		case ProtocolGRPC, ProtocolHTTP:
			return v, nil
		case "http/json":
			return "", fmt.Errorf("%s=http/json: the Go OTLP exporter does not send JSON; set it to http/protobuf or grpc", env)
		default:
			return "", fmt.Errorf("%s=%q is not an OTLP protocol: set it to http/protobuf or grpc", env, v)
		}
	}
	if c.Protocol != "" {
		return c.Protocol, nil
	}
	return ProtocolHTTP, nil
}

// serviceName is service.name: OTEL_SERVICE_NAME, else c's, else "agentos".
func (c Config) serviceName() string {
	if v := os.Getenv(EnvServiceName); v != "" {
		return v
	}
	if c.ServiceName != "" {
		return c.ServiceName
	}
	return defaultServiceName
}
