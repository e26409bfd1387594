package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/internal/host"
)

// The epic's claim on our own system: how much context an agent needs to
// use one of 100 MCP tools, as classic tool definitions (every tool's
// name, description and inputSchema in the model's tool list) against
// tools as files plus search (the kernel tools' definitions, one
// search_tools answer and one read_file of the chosen module). Bytes are
// the JSON (or source) text a model would be sent; tokens are estimated as
// bytes/4 (the usual rule of thumb for English text and JSON with
// OpenAI/Anthropic tokenizers; no tokenizer is run).
//
//	go test -count=1 -run TestMCPContextMeasure -v .
func TestMCPContextMeasure(t *testing.T) {
	tools := hundredTools()
	url := serveTools(t, tools)
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess",
		MCP: host.MCPConfig{Servers: map[string]host.MCPServerConfig{"saas": {URL: url}}}})

	// Classic: the tool list a model is given, as the MCP server lists it.
	type def struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	classic := make([]def, len(tools))
	for i, tl := range tools {
		s, _ := json.Marshal(tl.InputSchema)
		classic[i] = def{tl.Name, tl.Description, s}
	}
	classicJSON, _ := json.Marshal(classic)

	// Tools as files: the kernel tools' definitions...
	kernelTools, err := rt.Tools()
	if err != nil {
		t.Fatal(err)
	}
	kernelJSON, _ := json.Marshal(kernelTools)
	// ...one search (the default limit, 10 hits)...
	const task = "create an invoice for a customer in the billing system"
	search, err := rt.Call(context.Background(), "search_tools", json.RawMessage(`{"query":"`+task+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var hits []struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(search, &hits)
	if len(hits) == 0 || hits[0].Path != "/mcp/saas/billing_create_invoice.ts" {
		t.Fatalf("search_tools did not find the invoice tool first: %s", search)
	}
	// ...and one read of the chosen module.
	module, err := rt.Call(context.Background(), "read_file", json.RawMessage(`{"path":"`+hits[0].Path+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	search3, err := rt.Call(context.Background(), "search_tools", json.RawMessage(`{"query":"`+task+`","limit":3}`))
	if err != nil {
		t.Fatal(err)
	}
	// ...or one brief search (path, name, summary, score: the epic's
	// searchTools shape), the module read giving the types.
	brief, err := rt.Call(context.Background(), "search_tools", json.RawMessage(`{"query":"`+task+`","detail":"brief"}`))
	if err != nil {
		t.Fatal(err)
	}
	var briefHits []struct {
		Path    string `json:"path"`
		Summary string `json:"summary"`
	}
	_ = json.Unmarshal(brief, &briefHits)
	if len(briefHits) != len(hits) || briefHits[0].Path != hits[0].Path || briefHits[0].Summary == "" || strings.Contains(string(brief), `"parameters"`) {
		t.Fatalf("a brief search differs from the full one but for its detail: %s", brief)
	}
	filesBrief := len(kernelJSON) + len(brief) + len(module)
	files := len(kernelJSON) + len(search) + len(module)
	files3 := len(kernelJSON) + len(search3) + len(module)
	if files >= len(classicJSON) {
		t.Fatalf("tools as files (%d bytes) are not smaller than classic definitions (%d bytes)", files, len(classicJSON))
	}
	row := func(name string, n int) string {
		return fmt.Sprintf("| %-58s | %8d | %7d |", name, n, n/4)
	}
	table := []string{
		"| context for one task among 100 MCP tools                   |    bytes | ~tokens |",
		"|------------------------------------------------------------|----------|---------|",
		row("classic: 100 tool definitions (name, description, schema)", len(classicJSON)),
		row(fmt.Sprintf("files: the %d kernel tools' definitions", len(kernelTools)), len(kernelJSON)),
		row("files: one search_tools answer (10 hits)", len(search)),
		row("files: one read_file of the chosen module", len(module)),
		row("files + search: total", files),
		fmt.Sprintf("| %-58s | %7.1f%% |         |", "reduction", 100*(1-float64(files)/float64(len(classicJSON)))),
		row("files: one search_tools answer with limit 3", len(search3)),
		row("files + search (limit 3): total", files3),
		fmt.Sprintf("| %-58s | %7.1f%% |         |", "reduction (limit 3)", 100*(1-float64(files3)/float64(len(classicJSON)))),
		row("files: one search_tools answer with detail brief (10 hits)", len(brief)),
		row("files + brief search: total", filesBrief),
		fmt.Sprintf("| %-58s | %7.1f%% |         |", "reduction (brief)", 100*(1-float64(filesBrief)/float64(len(classicJSON)))),
	}
	t.Log("\n" + strings.Join(table, "\n"))
}

// hundredTools are 100 tools shaped like a SaaS API's: 10 services × 10
// actions, each with a two-sentence description and 4-6 described
// parameters. They are synthetic (our measure, not a claim about a
// particular vendor), sized like the tools of published MCP servers.
func hundredTools() []*mcp.Tool {
	services := []string{"billing", "crm", "tickets", "calendar", "storage", "mail", "chat", "wiki", "analytics", "hr"}
	actions := []struct{ verb, obj, what string }{
		{"create", "invoice", "Creates a new %s record from the given fields and returns its id and URL."},
		{"get", "invoice", "Fetches one %s record by its id, with every field and its audit history."},
		{"list", "invoices", "Lists %s records matching the filters, newest first, one page at a time."},
		{"update", "invoice", "Updates the given fields of a %s record; fields left out are unchanged."},
		{"delete", "invoice", "Deletes a %s record by id; deleted records stay recoverable for 30 days."},
		{"search", "records", "Full-text search over %s records, with highlighting of the matched terms."},
		{"export", "report", "Exports %s records as CSV or JSON to a download URL valid for one hour."},
		{"import", "records", "Imports %s records from a CSV or JSON file, validating every row first."},
		{"share", "record", "Shares a %s record with users or groups, with read or write permission."},
		{"archive", "records", "Archives %s records older than a date so that they leave default listings."},
	}
	var out []*mcp.Tool
	for _, s := range services {
		for _, a := range actions {
			obj := a.obj
			if s != "billing" {
				obj = strings.ReplaceAll(strings.ReplaceAll(obj, "invoices", "items"), "invoice", "item")
			}
			props := map[string]any{
				"account_id": map[string]any{"type": "string", "description": "The workspace account the " + s + " data belongs to."},
				"id":         map[string]any{"type": "string", "description": "The record's id, as returned when it was created."},
				"fields":     map[string]any{"type": "object", "description": "The record's fields by name (see the " + s + " schema for the names and types).", "additionalProperties": true},
				"page_size":  map[string]any{"type": "integer", "description": "How many records per page, 1 to 100 (default 25).", "minimum": 1, "maximum": 100},
				"cursor":     map[string]any{"type": "string", "description": "The cursor of the next page, from the previous answer."},
				"format":     map[string]any{"type": "string", "enum": []string{"csv", "json"}, "description": "The export format."},
			}
			out = append(out, &mcp.Tool{
				Name:        s + "_" + a.verb + "_" + obj,
				Description: fmt.Sprintf(a.what, s) + " Requires the " + s + ":" + a.verb + " scope on the account.",
				InputSchema: map[string]any{"type": "object", "properties": props, "required": []string{"account_id"}},
			})
		}
	}
	return out
}

// serveTools serves tools on streamable HTTP on 127.0.0.1 (each answers
// {"ok": true}).
func serveTools(t *testing.T, tools []*mcp.Tool) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "saas", Version: "1"}, nil)
	for _, tl := range tools {
		s.AddTool(tl, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	return "http://" + ln.Addr().String()
}
