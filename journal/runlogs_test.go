package journal

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A run's logs and trace id are kept in its record on both storages, read
// back after the journal is reopened, bounded (what is left out is
// counted), and scrubbed of the secrets the journal knows.
func TestRunLogsAndTraceIDRoundTrip(t *testing.T) {
	both(t, func(t *testing.T) {
		const secret = "hunter2-very-secret"
		path := filepath.Join(t.TempDir(), "journal.db")
		j := openAt(t, path, Options{Durability: SyncEach, Secrets: []string{secret}})
		run := mustBegin(t, j, RunMeta{ID: "logged", Kind: "exec", Tool: "tools/x.ts", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"})
		big := strings.Repeat("x", MaxRunLogBytes/4)
		lines := []string{"first line", "token is " + secret, big, big, big, big, "never kept"}
		run.SetLogs(lines)
		if err := run.End(StatusOK, json.RawMessage(`1`), nil); err != nil {
			t.Fatal(err)
		}
		j.Close()
		j = openAt(t, path, Options{})
		m, err := j.Get("logged")
		if err != nil {
			t.Fatal(err)
		}
		if m.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("TraceID = %q after reopening", m.TraceID)
		}
		if len(m.Logs) < 2 || m.Logs[0] != "first line" || m.Logs[1] != "token is "+Redacted {
			t.Fatalf("Logs = %.200q: want the lines as logged, the secret scrubbed", m.Logs)
		}
		total := 0
		for _, l := range m.Logs {
			total += len(l)
		}
		if total > MaxRunLogBytes {
			t.Errorf("%d bytes of logs kept, over MaxRunLogBytes (%d)", total, MaxRunLogBytes)
		}
		if m.LogsCut == 0 || m.LogsCut+len(m.Logs) < len(lines) || slicesHas(m.Logs, "never kept") {
			t.Errorf("LogsCut = %d with %d lines kept of %d: the lines past the bound must be counted, not kept", m.LogsCut, len(m.Logs), len(lines))
		}
	})
}

// A run recorded before agentos kept logs and trace ids reads as it did:
// no logs, no trace id.
func TestRunRecordWithoutLogsStillReads(t *testing.T) {
	both(t, func(t *testing.T) {
		j, _ := openTemp(t, Options{Durability: SyncEach})
		run := mustBegin(t, j, RunMeta{ID: "old", Kind: "exec", Tool: "tools/x.ts"})
		if err := run.End(StatusOK, json.RawMessage(`1`), nil); err != nil {
			t.Fatal(err)
		}
		m, err := j.Get("old")
		if err != nil {
			t.Fatal(err)
		}
		if m.Logs != nil || m.LogsCut != 0 || m.TraceID != "" {
			t.Errorf("a run that logged nothing reads Logs=%q LogsCut=%d TraceID=%q", m.Logs, m.LogsCut, m.TraceID)
		}
		raw, _ := json.Marshal(m)
		if strings.Contains(string(raw), `"logs"`) || strings.Contains(string(raw), `"trace_id"`) {
			t.Errorf("a run without logs or trace id stores %s: old and new records must look alike", raw)
		}
	})
}

func slicesHas(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
