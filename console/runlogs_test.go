package console

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// loggedBackend answers one run with logs cut by the journal's bound.
type loggedBackend struct{ fakeBackend }

func (f *loggedBackend) Run(_ context.Context, _ Principal, id string) (RunDetail, error) {
	return RunDetail{RunSummary: RunSummary{ID: id, Kind: "exec", Tool: "tools/x.ts"},
		Logs: []string{"first", `<script>alert(1)</script>`}, LogsCut: 3, LogsLimit: 16 << 10,
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}, nil
}

// A run's page shows its logs as text (a tool's log line is never markup),
// says how many lines the journal's bound left out, and names the trace id.
func TestRunPageShowsLogsAndTraceID(t *testing.T) {
	ts := newTestConsole(t, &loggedBackend{}, Options{Anonymous: true})
	resp, err := http.Get(ts.URL + "/runs/r1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	page := string(b)
	for _, want := range []string{`id="logs"`, "first", "&lt;script&gt;alert(1)&lt;/script&gt;", "3 more line(s) not kept", "16 KiB", `<code id="trace-id">4bf92f3577b34da6a3ce929d0e0e4736</code>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("a logged line is served as markup")
	}
}
