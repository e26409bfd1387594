package driver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/vfs"
)

func TestMuxRoutesAndRefusesUnknownDrivers(t *testing.T) {
	m := Mux{ClockDriver: Clock{Now: func() time.Time { return time.UnixMilli(1234) }}, RandomDriver: Random{Seed: func() uint64 { return 7 }}}
	v, err := m.Do(context.Background(), Call{Seq: 1, Driver: ClockDriver, Op: "now"})
	if err != nil || string(v) != "1234" {
		t.Fatalf("clock: %s %v", v, err)
	}
	if v, _ := m.Do(context.Background(), Call{Seq: 2, Driver: RandomDriver, Op: "seed"}); string(v) != "7" {
		t.Fatalf("random: %s", v)
	}
	_, err = m.Do(context.Background(), Call{Seq: 3, Driver: "sql", Op: "query"})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnsupported || !strings.Contains(e.Message, `no "sql" driver`) || !strings.Contains(e.Message, "clock, random") {
		t.Fatalf("unknown driver: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Do(ctx, Call{Driver: ClockDriver, Op: "now"}); AsError(err).Code != CodeUnavailable {
		t.Fatalf("cancelled context: %v", err)
	}
}

func TestChainOrder(t *testing.T) {
	var order []string
	mw := func(name string) Middleware {
		return func(next Host) Host {
			return HostFunc(func(ctx context.Context, c Call) (json.RawMessage, error) {
				order = append(order, name)
				return next.Do(ctx, c)
			})
		}
	}
	h := Chain(HostFunc(func(context.Context, Call) (json.RawMessage, error) { order = append(order, "host"); return nil, nil }), mw("outer"), nil, mw("inner"))
	h.Do(context.Background(), Call{})
	if strings.Join(order, ",") != "outer,inner,host" {
		t.Fatalf("order %v", order)
	}
}

func TestFSDevice(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("A"), 0o644)
	j, _ := vfs.Open(dir)
	defer j.Close()
	sb := vfs.NewSandbox(j, vfs.SandboxConfig{TempDir: t.TempDir()})
	defer sb.Close()
	fs := FS{Sandbox: sb, MaxReadBytes: 4}
	ctx := context.Background()
	if v, err := fs.Do(ctx, "read_file", json.RawMessage(`{"path":"a.txt"}`)); err != nil || string(v) != `"A"` {
		t.Fatalf("read: %s %v", v, err)
	}
	if _, err := fs.Do(ctx, "read_file", json.RawMessage(`{"pth":"a.txt"}`)); AsError(err).Code != CodeInvalid || !strings.Contains(err.Error(), `unknown field "pth"`) {
		t.Fatalf("misspelled field must be refused: %v", err)
	}
	if _, err := fs.Do(ctx, "read_file", json.RawMessage(`{"path":"../x"}`)); AsError(err).Code != CodeSecurity {
		t.Fatalf("escape: %v", err)
	}
	if _, err := fs.Do(ctx, "read_file", json.RawMessage(`{"path":"none"}`)); AsError(err).Code != CodeNotFound {
		t.Fatalf("missing: %v", err)
	}
	if _, err := fs.Do(ctx, "write_file", json.RawMessage(`{"path":"/tmp/big","content":"12345"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Do(ctx, "read_file", json.RawMessage(`{"path":"/tmp/big"}`)); AsError(err).Code != CodeInvalid || !strings.Contains(err.Error(), "more than the 4") {
		t.Fatalf("read cap: %v", err)
	}
	if v, err := fs.Do(ctx, "list_files", nil); err != nil || string(v) != `["a.txt"]` {
		t.Fatalf("list: %s %v", v, err)
	}
	if _, err := fs.Do(ctx, "delete", nil); AsError(err).Code != CodeUnsupported {
		t.Fatalf("unknown op: %v", err)
	}
}
