package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
	"github.com/asynkron/protoactor-go/actor"
)

// Options configure the git actor.
type Options struct {
	// Jail is the tool root (REQUIRED).
	Jail *vfs.Jail
	// Repo persists every write (commit and push, or a review branch). nil:
	// writes stay in the working tree.
	Repo *repo.Repo
	// OnWrite, when set, is called after a file is written and before it
	// is committed (the registry's Register, so that meta.json goes in the
	// same commit). Its error fails the write.
	OnWrite func(path string, content []byte) error
	// PersistTimeout bounds one persist (commit, push, retries). Default 1 min.
	PersistTimeout time.Duration
}

// Props returns the props of a git actor.
func Props(opts Options) *actor.Props {
	if opts.PersistTimeout <= 0 {
		opts.PersistTimeout = time.Minute
	}
	return actor.PropsFromProducer(func() actor.Actor { return &gitActor{opts: opts} })
}

type gitActor struct{ opts Options }

// Receive is the git actor's one message switch.
func (a *gitActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *WriteFile:
		ctx.Respond(a.onWrite(m))
	case *PatchFile:
		ctx.Respond(a.onPatch(m))
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		ctx.Logger().Warn("git: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

func (a *gitActor) onWrite(m *WriteFile) *Written {
	_, err := a.opts.Jail.Stat(m.Path)
	created := errors.Is(err, vfs.ErrNotFound)
	return a.write(m.Path, m.Content, created, "write")
}

func (a *gitActor) onPatch(m *PatchFile) *Written {
	if m.Search == "" {
		return &Written{Path: m.Path, Err: fmt.Errorf("%w: %s needs the text to replace; to rewrite the whole file use write_file", ErrEmptySearch, m.Path)}
	}
	old, err := a.opts.Jail.ReadFile(m.Path)
	if err != nil {
		return &Written{Path: m.Path, Err: err}
	}
	i := bytes.Index(old, []byte(m.Search))
	if i < 0 {
		return &Written{Path: m.Path, Err: fmt.Errorf("%w: %s does not contain the search text (%d bytes); read the file again and copy the text exactly, whitespace included", ErrSearchNotFound, m.Path, len(m.Search))}
	}
	next := make([]byte, 0, len(old)-len(m.Search)+len(m.Replace))
	next = append(next, old[:i]...)
	next = append(next, m.Replace...)
	next = append(next, old[i+len(m.Search):]...)
	return a.write(m.Path, next, false, "patch")
}

// write writes the file, lets OnWrite derive from it, and persists it.
// IMPORTANT: with a Repo, a tool source that does not compile is written to
// the working tree only: never registered, committed or pushed to the
// shared upstream, until a later write makes it compile.
func (a *gitActor) write(p string, content []byte, created bool, verb string) *Written {
	if err := a.opts.Jail.WriteFile(p, content); err != nil {
		return &Written{Path: p, Err: err}
	}
	w := &Written{Path: p, Bytes: len(content), Hash: transpile.Hash(content), Created: created}
	if a.opts.Repo != nil {
		if err := Compiles(p, content); err != nil {
			w.Held = true
			w.Err = fmt.Errorf("%w; it was written locally only and is not persisted or shared until it compiles: fix it with write_file or patch_file", err)
			return w
		}
	}
	if a.opts.OnWrite != nil {
		if err := a.opts.OnWrite(p, content); err != nil {
			w.Err = fmt.Errorf("%s was written but not registered: %w", p, err)
			return w
		}
	}
	if a.opts.Repo == nil {
		return w
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.PersistTimeout)
	defer cancel()
	res, err := a.opts.Repo.Persist(ctx, []string{p}, fmt.Sprintf("%s %s", verb, p))
	w.Commit, w.Branch, w.PRURL = res.Commit, res.Branch, res.PRURL
	if err != nil {
		w.Err = fmt.Errorf("%s: %w", p, err)
	}
	return w
}

// Compiles returns nil when content at path is not a tool source (.ts or
// .js) or when it transpiles; otherwise an error wrapping ErrNotCompiled
// with esbuild's line:column diagnostics. It is what decides that a write
// stays local (and the repo's Options.Hold for files a crash left
// unsaved).
func Compiles(p string, content []byte) error {
	switch path.Ext(p) {
	case ".ts", ".js":
	default:
		return nil
	}
	if _, err := transpile.Default().Transpile(p, content); err != nil {
		return fmt.Errorf("%w: %v", ErrNotCompiled, err)
	}
	return nil
}
