package telemetry_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/leaktest"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/telemetry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, leaktest.Options...) }

// span is one span a receiver got, with its resource's service.name.
type span struct {
	service string
	*tracepb.Span
}

func (s span) attr(key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return anyString(kv.Value), true
		}
	}
	return "", false
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_ArrayValue:
		parts := []string{}
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, anyString(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return v.String()
}

// receiver collects the spans of OTLP export requests.
type receiver struct {
	collectorpb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []span
}

func (r *receiver) add(req *collectorpb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = anyString(kv.Value)
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, span{service, s})
			}
		}
	}
}

// Export is the gRPC receiver's handler.
func (r *receiver) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	r.add(req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// ServeHTTP is the OTLP/HTTP receiver's handler (binary protobuf).
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(req.Body)
	var msg collectorpb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg)
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *receiver) named(prefix string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func (r *receiver) byID(id []byte) (span, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans {
		if string(s.SpanId) == string(id) {
			return s, true
		}
	}
	return span{}, false
}

// listenHTTP serves an OTLP/HTTP receiver on loopback; it returns the base
// URL.
func listenHTTP(t *testing.T, r *receiver) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// listenGRPC serves an OTLP/gRPC receiver on loopback; it returns its URL.
func listenGRPC(t *testing.T, r *receiver) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(srv, r)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String()
}

// clearEnv unsets the OTEL_* variables a developer's shell may hold.
func clearEnv(t *testing.T) {
	for _, k := range []string{telemetry.EnvEndpoint, telemetry.EnvTracesEndpoint, telemetry.EnvProtocol, telemetry.EnvTracesProtocol,
		telemetry.EnvTracesExporter, telemetry.EnvSDKDisabled, telemetry.EnvServiceName, telemetry.EnvSampler, telemetry.EnvCaptureContent} {
		t.Setenv(k, "")
	}
}

func toolCall(id, name, args string) llmtest.Step {
	return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: args}}}
}

// runNode starts a node with cfg against a scripted model, has an agent run
// fib(10) through exec_tool and then, with forge, forges a tool; it closes
// the node, which flushes the spans, and returns its tool root.
func runNode(t *testing.T, cfg host.Config, forge bool) string {
	t.Helper()
	steps := []llmtest.Step{
		toolCall("call_exec", "exec_tool", `{"path":"tools/math/fib.ts","args":{"n":10}}`),
		{Content: "fib(10) is 55"},
	}
	if forge {
		args, _ := json.Marshal(map[string]string{"path": "tools/math/fib2.ts", "code": samples.FibForged, "tests": strings.ReplaceAll(samples.FibForgedTests, "./fib", "./fib2")})
		steps = append(steps, toolCall("call_submit", "submit_tool", string(args)))
	}
	srv := llmtest.NewServer(steps)
	defer srv.Close()
	cfg.Root, cfg.Isolation, cfg.Logger = t.TempDir(), "inprocess", slog.New(slog.DiscardHandler)
	cfg.LLM = host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	write, _ := json.Marshal(map[string]string{"path": samples.FibPath, "content": samples.FibTool})
	if _, err := rt.Call(context.Background(), "write_file", write); err != nil {
		t.Fatal(err)
	}
	res, err := rt.RunAgent(context.Background(), "What is the 10th Fibonacci number? Ask jane@example.com", host.AgentOptions{Name: "asker"})
	if err != nil || res.Answer != "fib(10) is 55" {
		t.Fatalf("agent: %+v %v (model: %v)", res, err, srv.Err())
	}
	if forge {
		out, err := rt.Call(context.Background(), "forge_tool", json.RawMessage(`{"spec":"a ladder climbing counter for staircase puzzles"}`))
		if err != nil || !strings.Contains(string(out), "fib2.ts") {
			t.Fatalf("forge_tool: %s %v (model: %v)", out, err, srv.Err())
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg.Root
}

// one returns the only span named name.
func one(t *testing.T, r *receiver, name string) span {
	t.Helper()
	var got []span
	for _, s := range r.named(name) {
		if s.Name == name {
			got = append(got, s)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(got), name)
	}
	return got[0]
}

// wantAttrs fails unless s has each attribute with its value ("*": any).
func wantAttrs(t *testing.T, s span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok := s.attr(k)
		if !ok || (v != "*" && got != v) {
			t.Errorf("span %q: %s = %q (set %v), want %q", s.Name, k, got, ok, v)
		}
	}
}

// childOf fails unless child's parent is parent, in the same trace.
func childOf(t *testing.T, child, parent span) {
	t.Helper()
	if string(child.TraceId) != string(parent.TraceId) || string(child.ParentSpanId) != string(parent.SpanId) {
		t.Errorf("span %q (trace %s, parent %s) is not a child of %q (trace %s, span %s)", child.Name, hex.EncodeToString(child.TraceId),
			hex.EncodeToString(child.ParentSpanId), parent.Name, hex.EncodeToString(parent.TraceId), hex.EncodeToString(parent.SpanId))
	}
}

// descendantOf fails unless an ancestor of child is anc.
func descendantOf(t *testing.T, r *receiver, child, anc span) {
	t.Helper()
	for s := child; len(s.ParentSpanId) > 0; {
		p, ok := r.byID(s.ParentSpanId)
		if !ok {
			break
		}
		if string(p.SpanId) == string(anc.SpanId) {
			return
		}
		s = p
	}
	t.Errorf("span %q does not descend from %q", child.Name, anc.Name)
}

// A node exporting over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT) sends one
// trace per agent run and per forge, with the GenAI attributes and the
// parent/child links, and no content by default.
func TestOTLPHTTPGenAISpans(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	t.Setenv(telemetry.EnvEndpoint, listenHTTP(t, r))
	t.Setenv(telemetry.EnvServiceName, "agentos-test")
	root := runNode(t, host.Config{}, true)

	agent := one(t, r, "invoke_agent asker")
	wantAttrs(t, agent, map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "asker", "gen_ai.agent.id": "*", "gen_ai.usage.input_tokens": "*"})
	if agent.service != "agentos-test" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's", agent.service)
	}
	chats := r.named("chat scripted")
	if len(chats) != 3 {
		t.Fatalf("%d chat spans, want 3 (2 agent steps, 1 forge attempt)", len(chats))
	}
	for _, c := range chats[:2] {
		childOf(t, c, agent)
		if c.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("chat span kind %v, want client", c.Kind)
		}
		wantAttrs(t, c, map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "scripted",
			"gen_ai.response.model": "scripted", "gen_ai.response.id": "*", "gen_ai.response.finish_reasons": "*",
			"gen_ai.usage.input_tokens": "*", "gen_ai.usage.output_tokens": "*", "gen_ai.request.max_tokens": "*",
			"server.address": "127.0.0.1", "server.port": "*",
		})
		for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions"} {
			if _, ok := c.attr(k); ok {
				t.Errorf("chat span carries %s while content capture is off", k)
			}
		}
	}
	if f, _ := chats[0].attr("gen_ai.response.finish_reasons"); f != "[tool_calls]" {
		t.Errorf("first step finish_reasons = %s", f)
	}
	tool := one(t, r, "execute_tool exec_tool")
	childOf(t, tool, agent)
	wantAttrs(t, tool, map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "exec_tool", "gen_ai.tool.call.id": "call_exec", "gen_ai.tool.type": "function"})
	if _, ok := tool.attr("gen_ai.tool.call.arguments"); ok {
		t.Error("execute_tool span carries the arguments while content capture is off")
	}
	kernel := one(t, r, "agentos.kernel.exec_tool")
	childOf(t, kernel, tool)
	run := one(t, r, "execute_tool tools/math/fib.ts")
	childOf(t, run, kernel)
	wantAttrs(t, run, map[string]string{"gen_ai.tool.type": "extension", "agentos.outcome": "ok"})

	forge := one(t, r, "invoke_agent forge")
	wantAttrs(t, forge, map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "forge", "gen_ai.agent.id": "*", "agentos.tool": "tools/math/fib2.ts"})
	childOf(t, chats[2], forge)
	if string(forge.TraceId) == string(agent.TraceId) {
		t.Error("the forge and the agent run share a trace; want one trace each")
	}
	tests := 0
	for _, s := range r.named("execute_tool tools/") { // the staged candidate's tests
		if string(s.TraceId) == string(forge.TraceId) {
			descendantOf(t, r, s, forge)
			tests++
		}
	}
	if tests == 0 {
		t.Error("no test run span in the forge's trace")
	}
	journaledTraceIDs(t, root, map[string]span{"agent": agent, "forge": forge, "exec tools/math/fib.ts": run})
}

// journaledTraceIDs fails unless the journal of root holds, for each
// kind (and tool) of want, a run whose trace id is that span's trace's.
func journaledTraceIDs(t *testing.T, root string, want map[string]span) {
	t.Helper()
	j, err := journal.Open(filepath.Join(root, ".agentos", "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	runs, err := j.Runs()
	if err != nil {
		t.Fatal(err)
	}
	for key, s := range want {
		found := false
		for _, m := range runs {
			if strings.TrimSpace(m.Kind+" "+m.Tool) == key && m.TraceID == hex.EncodeToString(s.TraceId) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s run in the journal with the trace id of span %q (%s)", key, s.Name, hex.EncodeToString(s.TraceId))
		}
	}
}

// Over OTLP/gRPC configured in agentos.json's tracing section, with content
// capture opted in by OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
// the spans carry the messages and the tool call's arguments and result;
// the e-mail the task holds is tokenized when the pii section is on.
func TestOTLPGRPCCapturesContentWhenOptedIn(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	t.Setenv(telemetry.EnvCaptureContent, "true")
	cfg := host.Config{Tracing: telemetry.Config{Protocol: telemetry.ProtocolGRPC, Endpoint: listenGRPC(t, r), ServiceName: "from-config"}}
	cfg.PII.Detect = []string{"email"}
	runNode(t, cfg, false)

	chat := r.named("chat scripted")
	if len(chat) != 2 {
		t.Fatalf("%d chat spans, want 2", len(chat))
	}
	in, ok := chat[0].attr("gen_ai.input.messages")
	if !ok || !strings.Contains(in, `"role":"user"`) || !strings.Contains(in, "10th Fibonacci") {
		t.Fatalf("gen_ai.input.messages = %q (set %v)", in, ok)
	}
	if strings.Contains(in, "jane@example.com") || !strings.Contains(in, "PII_EMAIL_") {
		t.Errorf("the captured prompt holds the e-mail, not its token: %s", in)
	}
	out, _ := chat[0].attr("gen_ai.output.messages")
	if !strings.Contains(out, `"type":"tool_call"`) || !strings.Contains(out, "call_exec") {
		t.Errorf("gen_ai.output.messages = %q", out)
	}
	tool := one(t, r, "execute_tool exec_tool")
	wantAttrs(t, tool, map[string]string{"gen_ai.tool.call.arguments": `{"path":"tools/math/fib.ts","args":{"n":10}}`})
	if res, _ := tool.attr("gen_ai.tool.call.result"); !strings.Contains(res, "55") {
		t.Errorf("gen_ai.tool.call.result = %q", res)
	}
	if tool.service != "from-config" {
		t.Errorf("service.name = %q, want tracing.service_name", tool.service)
	}
}
