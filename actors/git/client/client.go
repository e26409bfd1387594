package client

import (
	"context"
	"fmt"
	"time"

	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	pb "github.com/agentos-run/agentos/actors/git/gitpb"
)

// DefaultTimeout bounds a Client request when Client.Timeout is zero: a
// persist takes at most the git actor's git.Options.PersistTimeout
// (default 1 min) plus the registration, so it is a little longer.
const DefaultTimeout = 2 * time.Minute

// DefaultSyncTimeout bounds how long the git actor pulls for an Announce,
// and a WaitFor without a timeout waits: the actor's
// git.Options.SyncTimeout when zero.
const DefaultSyncTimeout = 30 * time.Second

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
	// Gate is the registration gate's report when the write changed an
	// existing tool source and the node has a gate (nil otherwise): the
	// recorded runs of the previous version replayed against the new one.
	// Set also when the gate refused the write (the error wraps
	// gate.ErrBlocked; nothing was written).
	Gate *gate.Report `json:"gate,omitempty"`
}

// Client is the typed client of a git actor: callers use it, never the raw
// messages (gitpb). A reply's Failure comes back as an error wrapping the
// sentinel it names (ErrSearchNotFound, ErrEmptySearch, ErrNotCompiled,
// regclient.ErrPersist, repo.ErrConflict, vfs.ErrSecurity, ...), so errors.Is
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
	// Token is the capability token (capability.Token.Encode) of the
	// process the requests act for: the git actor checks its grants (write
	// on the path) and refuses the node's policy and state (git.Protected),
	// whatever it grants. Empty: the node itself, which only a client in
	// the git actor's own process is (the request travels in a
	// system.Local); from another node a request without a token is
	// refused (system.ErrUnauthenticated).
	Token string
}

// As returns a copy of c whose requests act for the holder of token
// (capability.Token.Encode), as Client.Token says.
func (c Client) As(token string) *Client {
	c.Token = token
	return &c
}

// New returns the client of the git actor pid, sending from root.
func New(root actor.SenderContext, pid *actor.PID) *Client {
	return &Client{PID: pid, Root: root}
}

// WriteFile writes content to path (relative to the tool root), registers
// it when it is a tool, and persists it. The Written is filled as far as
// the write went, also with an error: a write that reached the working tree
// but was not registered or persisted says so in the error, with Path and
// Hash set (and Held for a tool that does not compile).
func (c *Client) WriteFile(ctx context.Context, path string, content []byte) (Written, error) {
	return c.ask(ctx, &pb.WriteFile{Path: path, Content: content, Token: c.Token})
}

// WriteFenced is WriteFile for a forge run held with the fencing token
// fence (journal.Run.Fence): the commit carries both, and is dropped, never
// pushed, when the upstream holds a commit of run made with a greater
// token (the error wraps repo.ErrFenced; the tool root keeps the
// upstream's version).
func (c *Client) WriteFenced(ctx context.Context, path string, content []byte, run string, fence int64) (Written, error) {
	return c.ask(ctx, &pb.WriteFile{Path: path, Content: content, Token: c.Token, FenceRun: run, Fence: fence})
}

// PatchFile replaces the first occurrence of search in the file at path by
// replace, then registers and persists it as WriteFile does. Errors wrap
// ErrSearchNotFound (search absent; the file is unchanged), ErrEmptySearch,
// or what WriteFile's do.
func (c *Client) PatchFile(ctx context.Context, path, search, replace string) (Written, error) {
	return c.ask(ctx, &pb.PatchFile{Path: path, Search: search, Replace: replace, Token: c.Token})
}

// Synced is the result of Announce and WaitFor: the tool root includes
// Commit.
type Synced struct {
	// Commit is the commit asked for.
	Commit string `json:"commit"`
	// Head is the tool root's branch head when the actor answered.
	Head string `json:"head"`
	// Changed and Deleted are the paths the pulls made for an Announce
	// added or modified, and removed; Registered the changed files the
	// registry actor registered as tools.
	Changed    []string `json:"changed,omitempty"`
	Deleted    []string `json:"deleted,omitempty"`
	Registered []string `json:"registered,omitempty"`
}

// Announce tells the git actor that commit was pushed to branch (a
// gitpb.Committed another node published; branch "" means this node's). It
// returns once the tool root includes commit, pulling from the upstream
// (for at most the actor's git.Options.SyncTimeout when the commit is not upstream yet)
// and registering every changed tool with the registry actor. Errors wrap
// ErrCommitNotReached (not reached within the bound, or another branch:
// the message says what the last pull met), ErrBadCommit, ErrNoRepo,
// ErrUnavailable, or a registry error when the commit was reached but a
// pulled tool was not registered (the Synced is filled then).
func (c *Client) Announce(ctx context.Context, commit, branch string) (Synced, error) {
	return c.sync(ctx, &pb.Announce{Commit: commit, Branch: branch, Token: c.Token}, c.timeout())
}

// WaitFor returns once the tool root includes commit: the barrier before a
// read that must not see a stale tree. It fetches nothing itself (Announce
// does), and waits at most timeout (0: the actor's git.Options.SyncTimeout), then fails
// with ErrCommitNotReached. ErrBadCommit, ErrNoRepo and ErrUnavailable as
// for Announce.
func (c *Client) WaitFor(ctx context.Context, commit string, timeout time.Duration) (Synced, error) {
	ask := c.timeout()
	if wait := timeout; wait <= 0 {
		ask = max(ask, DefaultSyncTimeout+10*time.Second)
	} else {
		ask = max(ask, wait+10*time.Second)
	}
	return c.sync(ctx, &pb.WaitFor{Commit: commit, TimeoutMs: timeout.Milliseconds(), Token: c.Token}, ask)
}

// Pull brings the tool root up to the upstream now and registers what
// changed (the catch-up of a node that joins a cluster). Errors: ErrNoRepo,
// ErrUnavailable, or the pull's.
func (c *Client) Pull(ctx context.Context) (Synced, error) {
	return c.sync(ctx, &pb.Pull{Token: c.Token}, c.timeout())
}

func (c *Client) sync(ctx context.Context, req proto.Message, timeout time.Duration) (Synced, error) {
	name := req.ProtoReflect().Descriptor().Name()
	res, err := system.Ask(ctx, c.Root, c.PID, system.Outgoing(c.Root, c.PID, req), timeout)
	if err != nil {
		return Synced{}, fmt.Errorf("%w: %s to %s: %w; check that the node's git actor is running", ErrUnavailable, name, c.PID, err)
	}
	s, ok := res.(*pb.Synced)
	if !ok {
		return Synced{}, fmt.Errorf("%w: %s to %s answered %T, want *gitpb.Synced", ErrUnavailable, name, c.PID, res)
	}
	return syncedFromPB(s)
}

func (c *Client) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// ask sends req and waits for the Written, at most Timeout and until ctx
// ends.
func (c *Client) ask(ctx context.Context, req proto.Message) (Written, error) {
	name := req.ProtoReflect().Descriptor().Name()
	res, err := system.Ask(ctx, c.Root, c.PID, system.Outgoing(c.Root, c.PID, req), c.timeout())
	if err != nil {
		return Written{}, fmt.Errorf("%w: %s to %s (a write already sent may still happen): %w; check that the node's git actor is running", ErrUnavailable, name, c.PID, err)
	}
	w, ok := res.(*pb.Written)
	if !ok {
		return Written{}, fmt.Errorf("%w: %s to %s answered %T, want *gitpb.Written", ErrUnavailable, name, c.PID, res)
	}
	return writtenFromPB(w)
}
