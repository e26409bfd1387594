package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/internal/host"
)

// TestForgeToolReusesWithoutModel is issue 11 item 7 through the API: the
// kernel's forge_tool, with no model configured, reuses a registered tool
// that scores above the threshold, and fails with forge.ErrNoModel only
// when a tool would have to be written.
func TestForgeToolReusesWithoutModel(t *testing.T) {
	t.Setenv("AGENTOS_LLM_BASE_URL", "")
	t.Setenv("AGENTOS_LLM_MODEL", "")
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"tools/text/csv.ts": `/**
 * Parse CSV text into rows of fields.
 * @tags csv, parse, rows
 */
export default function parseCsv({ text }: { text: string }): string[][] {
  return text.split("\n").filter((l) => l !== "").map((l) => l.split(","));
}
`})
	rt := start(t, host.Config{Root: root, Isolation: "inprocess"})
	out, err := rt.Call(context.Background(), "forge_tool", json.RawMessage(`{"spec":"parse csv text into rows"}`))
	var res forge.Result
	if err != nil || json.Unmarshal(out, &res) != nil || !res.Reused || res.Path != "tools/text/csv.ts" {
		t.Fatalf("forge_tool with no model must reuse: %s %v", out, err)
	}
	_, err = rt.Call(context.Background(), "forge_tool", json.RawMessage(`{"spec":"compute the phase of the moon for a date"}`))
	if !errors.Is(err, forge.ErrNoModel) || !strings.Contains(err.Error(), "docs/CONFIG.md") {
		t.Fatalf("forging with no model: %v, want ErrNoModel", err)
	}
}
