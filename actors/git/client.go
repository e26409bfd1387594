package git

import (
	"context"
	"fmt"
	"time"

	"github.com/agentos-run/agentos/actors/system"
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	pb "github.com/agentos-run/agentos/actors/git/gitpb"
)

// DefaultTimeout bounds a Client request when Client.Timeout is zero: a
// persist takes at most Options.PersistTimeout (default 1 min) plus the
// registration, so it is a little longer.
const DefaultTimeout = 2 * time.Minute

// Written is the result of WriteFile and PatchFile.
type Written struct {
	Path string `json:"path"`
	// Bytes is the new file's size.
	Bytes int `json:"bytes"`
	// Hash is the content hash of the new file (transpile.Hash).
	Hash string `json:"hash"`
	// Created says the file did not exist before.
	Created bool `json:"created"`
	// Commit is the commit that persisted the write ("" without a Repo).
	Commit string `json:"commit,omitempty"`
	// Branch is where it was pushed when not the shared branch: the review
	// branch (pr strategy), or the conflict branch keeping a version that
	// lost to another writer's.
	Branch string `json:"branch,omitempty"`
	// PRURL is the review opened for it (pr strategy).
	PRURL string `json:"pr_url,omitempty"`
	// Held says the file was written to the working tree only: it is a
	// tool source that does not compile (the error wraps ErrNotCompiled),
	// so it was neither registered nor persisted; the write that makes it
	// compile persists it.
	Held bool `json:"held,omitempty"`
}

// Client is the typed client of a git actor: callers use it, never the raw
// messages (gitpb). A reply's Failure comes back as an error wrapping the
// sentinel it names (ErrSearchNotFound, ErrEmptySearch, ErrNotCompiled,
// registry.ErrPersist, repo.ErrConflict, vfs.ErrSecurity, ...), so errors.Is
// works; ErrUnavailable when the actor did not answer.
//
// A Client is a value: copy it freely. It is safe for concurrent use.
type Client struct {
	// PID is the git actor (REQUIRED).
	PID *actor.PID
	// Root sends the requests (REQUIRED): the actor system's Root, or the
	// actor.Context of an actor calling the git actor.
	Root actor.SenderContext
	// Timeout bounds each request (also bounded by the ctx's deadline).
	// Zero means DefaultTimeout.
	Timeout time.Duration
}

// NewClient returns the client of the git actor pid, sending from root.
func NewClient(root actor.SenderContext, pid *actor.PID) *Client {
	return &Client{PID: pid, Root: root}
}

// WriteFile writes content to path (relative to the tool root), registers
// it when it is a tool, and persists it. The Written is filled as far as
// the write went, also with an error: a write that reached the working tree
// but was not registered or persisted says so in the error, with Path and
// Hash set (and Held for a tool that does not compile).
func (c *Client) WriteFile(ctx context.Context, path string, content []byte) (Written, error) {
	return c.ask(ctx, &pb.WriteFile{Path: path, Content: content})
}

// PatchFile replaces the first occurrence of search in the file at path by
// replace, then registers and persists it as WriteFile does. Errors wrap
// ErrSearchNotFound (search absent; the file is unchanged), ErrEmptySearch,
// or what WriteFile's do.
func (c *Client) PatchFile(ctx context.Context, path, search, replace string) (Written, error) {
	return c.ask(ctx, &pb.PatchFile{Path: path, Search: search, Replace: replace})
}

// ask sends req and waits for the Written, at most Timeout and until ctx
// ends.
func (c *Client) ask(ctx context.Context, req proto.Message) (Written, error) {
	name := req.ProtoReflect().Descriptor().Name()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	res, err := system.Ask(ctx, c.Root, c.PID, req, timeout)
	if err != nil {
		return Written{}, fmt.Errorf("%w: %s to %s (a write already sent may still happen): %w; check that the node's git actor is running", ErrUnavailable, name, c.PID, err)
	}
	w, ok := res.(*pb.Written)
	if !ok {
		return Written{}, fmt.Errorf("%w: %s to %s answered %T, want *gitpb.Written", ErrUnavailable, name, c.PID, res)
	}
	return writtenFromPB(w)
}
