package forge

import "errors"

// Errors of the forge, wrapped with what to do.
var (
	// ErrOptions: the forge is missing a required part.
	ErrOptions = errors.New("forge: bad options")
	// ErrSpec: the spec (or the run to resume) is unusable.
	ErrSpec = errors.New("forge: bad spec")
	// ErrGaveUp: no attempt passed check_tool and the tests; the result
	// lists every attempt with its errors.
	ErrGaveUp = errors.New("forge: no attempt passed")
	// ErrNoModel: a tool must be forged (none is reused) and no model is
	// configured. Reuse never needs one.
	ErrNoModel = errors.New("no model configured (set llm.* in agentos.json, see docs/CONFIG.md)")
	// ErrCallerGone: the process the forge works for cannot be reached
	// (its node died or does not answer), so its quota cannot be charged.
	// The forge stops and stays resumable, like a cancelled one: the next
	// caller of its spec resumes it (a HomeCharger returns it).
	ErrCallerGone = errors.New("forge: the caller's node does not answer")
)
