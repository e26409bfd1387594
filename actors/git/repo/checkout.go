package repo

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// What the upstream may put in a tool root, and what a tool root may send
// to the upstream.
//
// The upstream is shared: anyone who can push to it writes into every
// node's tool root at its next update. So an update checks out regular
// files only (modes 100644, 100755, and the legacy 100664): a symbolic
// link (120000), a submodule (gitlink, 160000) or any other mode is
// refused: never written, logged at Warn with its path and why, and listed
// by Repo.Refused; the rest of the update goes on (one bad entry does not
// keep a node from the other tools). A file is never written through a
// directory that is a symbolic link, and the node-local paths (nodeLocal:
// .git, .agentos, agentos.json) are never written from the upstream.
//
// A path is also refused when a name in it holds a control character
// (C0, DEL, C1) or a Unicode bidirectional control (U+202A-U+202E,
// U+2066-U+2069, U+200E, U+200F, U+061C: they make a listing show another
// name than the file's), or is over 255 bytes (what filesystems hold), or
// is not UTF-8; and a file over Options.MaxFileBytes is refused before
// its content is read (nameRefusal, writeWork).
//
// In the other direction, Persist never commits a symbolic link (asked for
// by name, it is an ErrPath error; met under a directory, it is skipped
// with a warning), never reads through a linked directory, and never
// commits a node-local path.

// Refusal is an entry of the upstream's tree that was not checked out.
type Refusal struct {
	// Path is the entry's path in the tree.
	Path string `json:"path"`
	// Mode is its Git mode, e.g. "0120000" for a symbolic link.
	Mode string `json:"mode"`
	// Reason says why it was refused.
	Reason string `json:"reason"`
}

// Refused lists the entries of the upstream's tree this Repo refused to
// check out since Hydrate (symbolic links, submodules, other non-regular
// modes, files under a linked directory), sorted by path.
func (r *Repo) Refused() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Refusal, 0, len(r.refused))
	for _, p := range sortedKeys(r.refused) {
		out = append(out, r.refused[p])
	}
	return out
}

// checkoutRefusal says why an entry of mode m is never written to the
// working tree ("" when it may be).
func checkoutRefusal(m filemode.FileMode) string {
	switch m {
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		return ""
	case filemode.Symlink:
		return "a symbolic link: links from the upstream are never checked out (one could expose the node's state or configuration to tools)"
	case filemode.Submodule:
		return "a submodule (gitlink): submodules are never checked out"
	default:
		return fmt.Sprintf("mode %s is not a regular file: only regular files are checked out", m)
	}
}

// DefaultMaxFileBytes is Options.MaxFileBytes's default: 32 MiB.
const DefaultMaxFileBytes = 32 << 20

// maxNameBytes bounds one name of a path from the upstream.
const maxNameBytes = 255

// nameRefusal says why the path p of the upstream's tree is never written
// ("" when it may be): a name with a control or bidirectional character,
// a name over 255 bytes, or text that is not UTF-8.
func nameRefusal(p string) string {
	if !utf8.ValidString(p) {
		return "its path is not valid UTF-8: only UTF-8 names are checked out"
	}
	for _, name := range strings.Split(p, "/") {
		if len(name) > maxNameBytes {
			return fmt.Sprintf("a name in its path is %d bytes long, over the %d a filesystem holds", len(name), maxNameBytes)
		}
	}
	for _, c := range p {
		switch {
		case c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0):
			return fmt.Sprintf("its path holds the control character %U: names with control characters are never checked out", c)
		case c >= 0x202a && c <= 0x202e, c >= 0x2066 && c <= 0x2069, c == 0x200e, c == 0x200f, c == 0x061c:
			return fmt.Sprintf("its path holds the bidirectional control %U, which makes a listing show another name than the file's: never checked out", c)
		}
	}
	return ""
}

// refuse records and logs (once per path and content) an entry that is
// not checked out.
func (r *Repo) refuse(p string, e entry, reason string) {
	rf := Refusal{Path: p, Mode: e.mode.String(), Reason: reason}
	if old, ok := r.refused[p]; ok && old == rf {
		return
	}
	r.refused[p] = rf
	r.log.Warn("git: refused an entry of the upstream's tree; it is not checked out",
		slog.String("path", p), slog.String("mode", rf.Mode), slog.String("reason", reason))
}

// linkAt returns the first component of the tool-root-relative path p
// (p itself included when self) that is a symbolic link, or "" when none
// is. Components that do not exist end the walk.
func (r *Repo) linkAt(p string, self bool) string {
	parts := strings.Split(p, "/")
	if !self {
		parts = parts[:len(parts)-1]
	}
	cur := r.opts.Dir
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return ""
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return strings.Join(parts[:i+1], "/")
		}
	}
	return ""
}

// nodeLocal says whether a path belongs to this node only: .git (the
// repository), .agentos (journal, databases, sockets) and agentos.json
// (the node's security configuration: isolation, write_dirs, grants).
// IMPORTANT: they are never committed and never written from the
// upstream, whatever Options.Ignore says; the comparison ignores case
// (case-insensitive filesystems).
func nodeLocal(p string) bool {
	top, _, _ := strings.Cut(p, "/")
	return strings.EqualFold(top, ".git") || strings.EqualFold(top, ".agentos") || strings.EqualFold(p, NodeConfigFile)
}

// NodeConfigFile is the node's configuration file at the top of a tool
// root. It is node-local: never committed, never taken from the upstream.
const NodeConfigFile = "agentos.json"

// warnUpstreamPath explains, once per update, why an upstream path was not
// written.
func (r *Repo) warnUpstreamPath(p string) {
	if strings.EqualFold(p, NodeConfigFile) {
		r.log.Warn("git: the upstream holds "+NodeConfigFile+"; a node's security configuration never comes from the upstream: the local file is left untouched",
			slog.String("path", p))
		return
	}
	r.log.Warn("git: skipping an unsafe or node-local path from the upstream tree", slog.String("path", p))
}
