package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/telemetry"
)

// A bad tracing section is refused with what to write instead.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c    telemetry.Config
		want string
	}{
		{telemetry.Config{Exporter: "jaeger"}, `tracing.exporter "jaeger" is not known: write "otlp"`},
		{telemetry.Config{Protocol: "http/json"}, `tracing.protocol "http/json" is not known: write "http/protobuf"`},
		{telemetry.Config{Endpoint: "127.0.0.1:4318"}, `tracing.endpoint "127.0.0.1:4318" is not an http(s) URL`},
		{telemetry.Config{Endpoint: "https://user:pw@collector:4318"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{telemetry.Config{SampleRatio: 1.5}, "tracing.sample_ratio 1.5 is not between 0 and 1"},
	} {
		err := tc.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
		if _, err := telemetry.Start(context.Background(), tc.c); err == nil {
			t.Errorf("%+v: Start accepted it", tc.c)
		}
	}
	if err := (telemetry.Config{Exporter: "otlp", Protocol: "grpc", Endpoint: "https://collector.example:4317", SampleRatio: 0.5}).Validate(); err != nil {
		t.Errorf("a good section refused: %v", err)
	}
}

// Without an endpoint, Start makes no provider (nothing is dialled); an
// endpoint in the section or the environment turns export on, and the
// environment's "none" turns it off; a protocol the Go exporter cannot
// speak is an error naming the variable.
func TestStartOnlyWhenConfigured(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		env  map[string]string
		c    telemetry.Config
		want bool
	}{
		{"nothing", nil, telemetry.Config{}, false},
		{"section endpoint", nil, telemetry.Config{Endpoint: "http://127.0.0.1:1"}, true},
		{"env endpoint", map[string]string{telemetry.EnvEndpoint: "http://127.0.0.1:1"}, telemetry.Config{}, true},
		{"env traces endpoint", map[string]string{telemetry.EnvTracesEndpoint: "http://127.0.0.1:1/v1/traces"}, telemetry.Config{}, true},
		{"section none", map[string]string{telemetry.EnvEndpoint: "http://127.0.0.1:1"}, telemetry.Config{Exporter: "none"}, false},
		{"section otlp", nil, telemetry.Config{Exporter: "otlp"}, true},
		{"env exporter none", map[string]string{telemetry.EnvTracesExporter: "none"}, telemetry.Config{Endpoint: "http://127.0.0.1:1"}, false},
		{"sdk disabled", map[string]string{telemetry.EnvSDKDisabled: "true"}, telemetry.Config{Exporter: "otlp"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			p, err := telemetry.Start(ctx, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if (p != nil) != tc.want {
				t.Fatalf("provider made: %v, want %v", p != nil, tc.want)
			}
			if err := p.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Setenv(telemetry.EnvProtocol, "http/json")
	if _, err := telemetry.Start(ctx, telemetry.Config{Exporter: "otlp"}); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL=http/json") {
		t.Fatalf("http/json: %v", err)
	}
}

// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT wins over the section
// when it is a boolean.
func TestCaptureContent(t *testing.T) {
	clearEnv(t)
	if telemetry.CaptureContent(false) || !telemetry.CaptureContent(true) {
		t.Fatal("unset variable: the section decides")
	}
	t.Setenv(telemetry.EnvCaptureContent, "true")
	if !telemetry.CaptureContent(false) {
		t.Fatal("true turns it on")
	}
	t.Setenv(telemetry.EnvCaptureContent, "false")
	if telemetry.CaptureContent(true) {
		t.Fatal("false turns it off")
	}
}
