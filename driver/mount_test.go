package driver

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// memMount is a Mount over a map of files.
type memMount map[string]string

func (m memMount) List(_ context.Context, dir string) ([]string, error) {
	var out []string
	for name := range m {
		if d, _, _ := strings.Cut(name, "/"); dir == "" {
			out = append(out, d+"/")
		} else if strings.HasPrefix(name, dir+"/") {
			out = append(out, name)
		}
	}
	return out, nil
}

func (m memMount) ReadFile(_ context.Context, name string) ([]byte, error) {
	if s, ok := m[name]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

// The fs device serves a mount's files at its mount point: read and list
// there, never write.
func TestFSMounts(t *testing.T) {
	f := FS{Mounts: map[string]Mount{"/mcp": memMount{"s/t.ts": "export default 1;"}}}
	do := func(op, req string) (json.RawMessage, error) {
		return f.Do(context.Background(), op, json.RawMessage(req))
	}
	if out, err := do("list_files", `{"dir":"/mcp"}`); err != nil || string(out) != `["/mcp/s/"]` {
		t.Fatalf("list /mcp: %s %v", out, err)
	}
	if out, err := do("list_files", `{"dir":"/mcp/s/"}`); err != nil || string(out) != `["/mcp/s/t.ts"]` {
		t.Fatalf("list /mcp/s: %s %v", out, err)
	}
	if out, err := do("read_file", `{"path":"/mcp/./s/t.ts"}`); err != nil || string(out) != `"export default 1;"` {
		t.Fatalf("read: %s %v", out, err)
	}
	var e *Error
	if _, err := do("read_file", `{"path":"/mcp/s/nope.ts"}`); !errors.As(err, &e) || e.Code != CodeNotFound {
		t.Fatalf("read a missing file: %v", err)
	}
	if _, err := do("write_file", `{"path":"/mcp/s/t.ts","content":"x"}`); !errors.As(err, &e) || e.Code != CodeSecurity || !strings.Contains(e.Message, "read-only") {
		t.Fatalf("write under the mount: %v", err)
	}
	if _, _, _, ok := MountOf(f.Mounts, "/mcpx/a"); ok {
		t.Fatal("/mcpx is not under /mcp")
	}
}
