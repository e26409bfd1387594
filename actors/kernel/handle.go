package kernel

import (
	"context"

	"github.com/agentos-run/agentos/actors/kernel/proc"
)

// The process-handle leaf (actors/kernel/proc): a package that runs as a
// process (agent, mcpserver) holds a proc.Process and spawns through a
// proc.Spawner instead of importing this package. *Process and *Kernel
// implement them.
var (
	_ proc.Process = (*Process)(nil)
	_ proc.Table   = (*Kernel)(nil)
)

// MainOf returns the Main that runs m with the process's handle: how a
// proc.Main (agent.Main, agent.ImageMain) is spawned, registered as an
// image or supervised.
func MainOf(m proc.Main) Main {
	return func(ctx context.Context, p *Process) error { return m(ctx, p) }
}

// Handle returns the live process pid as a handle (proc.Table; ok false:
// none). It is Process for the process-handle leaf.
func (k *Kernel) Handle(pid PID) (proc.Process, bool) {
	p := k.Process(pid)
	if p == nil {
		return nil, false
	}
	return p, true
}

// spawnOptions returns the SpawnOptions a proc.SpawnOptions chooses.
func spawnOptions(o proc.SpawnOptions) SpawnOptions {
	return SpawnOptions{Name: o.Name, Image: o.Image, Grants: o.Grants, Quota: o.Quota, From: o.From}
}

// SpawnProcess is Spawn for the process-handle leaf (proc.Spawner): it
// starts m as a child of the kernel.
func (k *Kernel) SpawnProcess(m proc.Main, opts proc.SpawnOptions) (proc.Process, error) {
	p, err := k.Spawn(MainOf(m), spawnOptions(opts))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// SpawnProcess is Spawn for the process-handle leaf (proc.Spawner): it
// starts m as p's child, with the same checks (the spawn right, grants
// within p's). IMPORTANT: opts.From MUST be nil: a child's token always
// derives from its parent's.
func (p *Process) SpawnProcess(m proc.Main, opts proc.SpawnOptions) (proc.Process, error) {
	c, err := p.Spawn(MainOf(m), spawnOptions(opts))
	if err != nil {
		return nil, err
	}
	return c, nil
}
