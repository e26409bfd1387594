package mcpdriver_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/internal/mcptest"
)

// Issue 29 item 2 (consume): an upstream server's resources and prompts
// are reached through the driver as its tools are: read_resource and
// get_prompt answer in canonical JSON; an unknown resource or prompt is
// the server's refusal; bad requests say what to pass.
func TestResourcesAndPromptsOfUpstream(t *testing.T) {
	srv := mcptest.StartHTTP(t, "")
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"tracker": {URL: srv.URL}}})
	ctx := context.Background()
	out, err := c.Do(ctx, mcpdriver.OpReadResource, json.RawMessage(`{"server":"tracker","uri":"tracker://readme"}`))
	if err != nil || !strings.Contains(string(out), `"text":"File bugs with create_issue."`) || !strings.Contains(string(out), `"uri":"tracker://readme"`) {
		t.Fatalf("read_resource: %s %v", out, err)
	}
	out, err = c.Do(ctx, mcpdriver.OpGetPrompt, json.RawMessage(`{"server":"tracker","prompt":"triage","args":{"title":"login fails"}}`))
	if err != nil || !strings.Contains(string(out), `Triage the issue: login fails`) || !strings.Contains(string(out), `"role":"user"`) {
		t.Fatalf("get_prompt: %s %v", out, err)
	}
	for _, bad := range []struct{ op, req, code, says string }{
		{mcpdriver.OpReadResource, `{"server":"tracker","uri":"tracker://nothing"}`, driver.CodeInvalid, "refused"},
		{mcpdriver.OpGetPrompt, `{"server":"tracker","prompt":"nothing"}`, driver.CodeInvalid, "refused"},
		{mcpdriver.OpReadResource, `{"server":"tracker"}`, driver.CodeInvalid, "uri"},
		{mcpdriver.OpGetPrompt, `{"server":"tracker","prompt":"triage","args":{"n":1}}`, driver.CodeInvalid, "server, prompt, args"},
		{mcpdriver.OpReadResource, `{"server":"nowhere","uri":"x://y"}`, driver.CodeNotFound, "nowhere"},
	} {
		_, err := c.Do(ctx, bad.op, json.RawMessage(bad.req))
		var de *driver.Error
		if !errors.As(err, &de) || de.Code != bad.code || !strings.Contains(de.Message, bad.says) {
			t.Errorf("%s %s: %v, want code %s saying %q", bad.op, bad.req, err, bad.code, bad.says)
		}
	}
}
