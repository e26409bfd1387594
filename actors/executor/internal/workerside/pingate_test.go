package workerside

import (
	"encoding/json"
	"testing"

	driver "github.com/agentos-run/agentos/driver/driverbase"
)

// TestPinGateInstant: a read is answered at once from a pin only where the
// gate itself would answer it from that pin without waiting (decide): the
// file pinned, nothing waiting before it, no write started, not a call the
// run's recording holds, a run that pins at all.
func TestPinGateInstant(t *testing.T) {
	read := func(seq uint64, path string) driver.Call {
		return driver.Call{Seq: seq, Driver: driver.FSDriver, Op: "read_file", Request: json.RawMessage(`{"path":"` + path + `"}`)}
	}
	pinned := func(p *PinPlan) *pinGate {
		g := newPinGate(p)
		if g.on {
			g.vals[`{"path":"tools/a"}`] = json.RawMessage(`"A"`)
		}
		return g
	}
	if v, ok := pinned(&PinPlan{}).instant(read(2, "tools/a")); !ok || string(v) != `"A"` {
		t.Fatalf("a pinned read: %s %v, want its pin", v, ok)
	}
	for _, c := range []struct {
		name string
		gate func() *pinGate
		call driver.Call
	}{
		{"a run that does not pin", func() *pinGate { return pinned(nil) }, read(2, "tools/a")},
		{"a file not pinned", func() *pinGate { return pinned(&PinPlan{}) }, read(2, "tools/b")},
		{"another op with the same request", func() *pinGate { return pinned(&PinPlan{}) }, driver.Call{Seq: 2, Driver: driver.FSDriver, Op: "list_files", Request: json.RawMessage(`{"path":"tools/a"}`)}},
		{"another driver", func() *pinGate { return pinned(&PinPlan{}) }, driver.Call{Seq: 2, Driver: "mcp", Op: "read_file", Request: json.RawMessage(`{"path":"tools/a"}`)}},
		{"after a write", func() *pinGate { g := pinned(&PinPlan{}); g.off = true; return g }, read(2, "tools/a")},
		{"a read at the parent before it", func() *pinGate { g := pinned(&PinPlan{}); g.busy = true; return g }, read(2, "tools/a")},
		{"calls queued before it", func() *pinGate {
			g := pinned(&PinPlan{})
			g.queue = append(g.queue, gated{call: read(1, "tools/b")})
			return g
		}, read(2, "tools/a")},
		{"the queue being sent", func() *pinGate { g := pinned(&PinPlan{}); g.draining = true; return g }, read(2, "tools/a")},
		{"a call its recording holds", func() *pinGate { return pinned(&PinPlan{Follows: true, Held: []uint64{2}}) }, read(2, "tools/a")},
	} {
		if v, ok := c.gate().instant(c.call); ok {
			t.Errorf("%s: answered at once with %s; want it started through the gate", c.name, v)
		}
	}
	if v, ok := pinned(&PinPlan{Follows: true, Held: []uint64{1}}).instant(read(2, "tools/a")); !ok || string(v) != `"A"` {
		t.Fatalf("a replayed read its recording does not hold: %s %v, want its pin", v, ok)
	}
}
