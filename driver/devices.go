package driver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/agentos-run/agentos/vfs"
)

// FS is the file device over a run's sandbox namespace. Operations:
//
//	read_file  {"path": P}               -> "content"
//	write_file {"path": P, "content": C} -> null
//	list_files {"dir": D}                -> ["path", ...]
//
// A path under one of Mounts (e.g. /mcp) is read and listed there instead:
// a mount is read-only, so write_file under it is refused.
type FS struct {
	Sandbox *vfs.Sandbox
	// Mounts are read-only trees of generated files by absolute mount
	// point, e.g. "/mcp" (the mcp driver's modules); nil: none. For a run
	// made for a caller, a GuardedMount MUST be given as seen For the
	// caller's rights (the executor does): FS checks no right itself.
	Mounts map[string]Mount
	// MaxReadBytes caps one read_file; 0 means 16 MiB.
	MaxReadBytes int
}

// Mount is a read-only tree of files served at an absolute path of the
// sandbox (driver.FS.Mounts) and of the kernel's list_files/read_file.
// Names are relative to the mount point ("" is its top). List answers the
// entries of a directory as names relative to the mount, a directory's
// ending in "/". Errors SHOULD be *Error (CodeNotFound for a missing name).
type Mount interface {
	List(ctx context.Context, dir string) ([]string, error)
	ReadFile(ctx context.Context, name string) ([]byte, error)
}

// A GuardedMount is a Mount whose entries need a capability right of the
// run's caller (e.g. /mcp: the mcp right on "<server>/<tool>").
// IMPORTANT: a run made for a caller (executor.Request.Rights set) MUST be
// served For(its rights), never the mount itself, in its fs device and its
// requires alike.
type GuardedMount interface {
	Mount
	// For returns the mount as the caller holding r sees it: its listings
	// show only what r may use, its reads refuse the rest, and nothing is
	// started or fetched for what r may not use.
	For(r CallerRights) Mount
}

// CallerRights are the capability rights of a run's caller, as a
// GuardedMount asks about them. Rights are spelt as capability.Right
// ("mcp"), resources as that right's scopes ("github/create_issue").
type CallerRights interface {
	// Allow authorizes one use of right on resource: nil, or an error
	// saying what is missing. It may count a use of the caller's token.
	Allow(right, resource string) error
	// Covers reports whether the caller holds right on resource, with no
	// side effect: for filtering a listing, never for authorizing.
	Covers(right, resource string) bool
	// Reaches reports whether the caller holds right on resource or on
	// anything under it (a grant on "github/create_issue" reaches
	// "github"), with no side effect: whether a directory is shown.
	Reaches(right, resource string) bool
}

// MountOf returns the mount of p among mounts and p's name in it (ok
// false: p is under no mount). p is cleaned lexically first.
func MountOf(mounts map[string]Mount, p string) (m Mount, point, name string, ok bool) {
	if !strings.HasPrefix(p, "/") {
		return nil, "", "", false
	}
	p = path.Clean(p)
	for point, m := range mounts {
		if p == point {
			return m, point, "", true
		}
		if strings.HasPrefix(p, point+"/") {
			return m, point, strings.TrimPrefix(p, point+"/"), true
		}
	}
	return nil, "", "", false
}

// mountError gives a mount's error a code.
func mountError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, fs.ErrNotExist) {
		return &Error{Code: CodeNotFound, Message: err.Error()}
	}
	return &Error{Code: CodeIO, Message: err.Error()}
}

// Do implements Device.
func (f FS) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	switch op {
	case "read_file":
		return f.readFile(ctx, op, req)
	case "write_file":
		return f.writeFile(op, req)
	case "list_files":
		return f.listFiles(ctx, op, req)
	}
	return nil, Errorf(CodeUnsupported, "fs has no operation %q (read_file, write_file, list_files)", op)
}

// readFile reads a file of a mount or of the sandbox, at most
// MaxReadBytes (default 16 MiB) of the latter.
func (f FS) readFile(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	var a struct {
		Path string `json:"path"`
	}
	var ok bool
	if a.Path, ok = decodeOne(req, "path"); !ok {
		if err := decode(op, req, &a); err != nil {
			return nil, err
		}
	}
	if m, _, name, ok := MountOf(f.Mounts, a.Path); ok {
		b, err := m.ReadFile(ctx, name)
		if err != nil {
			return nil, mountError(err)
		}
		return encode(string(b))
	}
	max := cmp.Or(f.MaxReadBytes, 16<<20)
	b, err := f.Sandbox.ReadFileMax(a.Path, int64(max))
	var big *vfs.TooLargeError
	if errors.As(err, &big) {
		return nil, Errorf(CodeInvalid, "read_file %q: the file has %d bytes, more than the %d a tool may read at once", a.Path, big.Size, max)
	}
	if err != nil {
		return nil, fsError(err)
	}
	return encodeString(b)
}

// writeFile writes a file of the sandbox; mounts are read-only.
func (f FS) writeFile(op string, req json.RawMessage) (json.RawMessage, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := decode(op, req, &a); err != nil {
		return nil, err
	}
	if _, point, _, ok := MountOf(f.Mounts, a.Path); ok {
		return nil, Errorf(CodeSecurity, "write_file %q: %s is read-only (generated files); write under /tmp or the tools directory", a.Path, point)
	}
	if err := f.Sandbox.WriteFile(a.Path, []byte(a.Content)); err != nil {
		return nil, fsError(err)
	}
	return json.RawMessage("null"), nil
}

// listFiles lists a directory of a mount (as paths under the mount point)
// or of the sandbox (default "."); never null.
func (f FS) listFiles(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	var a struct {
		Dir string `json:"dir"`
	}
	if err := decode(op, req, &a); err != nil {
		return nil, err
	}
	a.Dir = cmp.Or(a.Dir, ".")
	if m, point, name, ok := MountOf(f.Mounts, a.Dir); ok {
		names, err := m.List(ctx, name)
		if err != nil {
			return nil, mountError(err)
		}
		for i, n := range names {
			names[i] = point + "/" + n
		}
		return encode(names)
	}
	names, err := f.Sandbox.List(a.Dir)
	if err != nil {
		return nil, fsError(err)
	}
	if names == nil {
		names = []string{}
	}
	return encode(names)
}

func fsError(err error) error {
	switch {
	case errors.Is(err, vfs.ErrSecurity):
		return &Error{Code: CodeSecurity, Message: err.Error()}
	case errors.Is(err, vfs.ErrNotFound):
		return &Error{Code: CodeNotFound, Message: err.Error()}
	case errors.Is(err, vfs.ErrInvalidPath):
		return &Error{Code: CodeInvalid, Message: err.Error()}
	}
	return &Error{Code: CodeIO, Message: err.Error()}
}
