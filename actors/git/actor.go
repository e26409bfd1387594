package git

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
	"github.com/asynkron/protoactor-go/actor"
)

// Props returns the props of a git actor writing under jail.
func Props(jail *vfs.Jail) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &gitActor{jail: jail} })
}

type gitActor struct{ jail *vfs.Jail }

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
	_, err := a.jail.Stat(m.Path)
	created := errors.Is(err, vfs.ErrNotFound)
	return a.write(m.Path, m.Content, created)
}

func (a *gitActor) onPatch(m *PatchFile) *Written {
	if m.Search == "" {
		return &Written{Path: m.Path, Err: fmt.Errorf("%w: patch_file %s needs the text to replace; to rewrite the whole file use write_file", ErrEmptySearch, m.Path)}
	}
	old, err := a.jail.ReadFile(m.Path)
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
	return a.write(m.Path, next, false)
}

func (a *gitActor) write(p string, content []byte, created bool) *Written {
	if err := a.jail.WriteFile(p, content); err != nil {
		return &Written{Path: p, Err: err}
	}
	return &Written{Path: p, Bytes: len(content), Hash: transpile.Hash(content), Created: created}
}
