package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/agent/tournament"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/persona"
)

// Personas returns the tool root's personas (agents.personas_dir): read
// from the working tree, saved through the git actor like tools (committed
// and pushed with a Git upstream, so that they are shared as tools are).
func (rt *Runtime) Personas() *persona.Store {
	return &persona.Store{Dir: rt.cfg.Agents.Personas(), FS: rt.jail, Write: func(ctx context.Context, path string, content []byte) error {
		_, err := rt.node.WriteFile(ctx, path, content)
		return err
	}}
}

// SavePersona saves p as the current version of its persona (see
// persona.Store.Save): Origin defaults to "set".
func (rt *Runtime) SavePersona(ctx context.Context, p persona.Persona) (persona.Persona, error) {
	if p.Origin == "" {
		p.Origin = "set"
	}
	saved, err := rt.Personas().Save(ctx, p)
	if err != nil {
		return saved, err
	}
	return saved, rt.personaSaved(saved, saved.Origin)
}

// systemFor resolves the persona an agent is started with (ref, else
// agents.persona) to its system prompt and its "name@version"; none: the
// built-in prompt ("", "").
func (rt *Runtime) systemFor(ref string) (system, used string, err error) {
	if ref == "" {
		ref = rt.cfg.Agents.Persona
	}
	if ref == "" {
		return "", "", nil
	}
	p, err := rt.Personas().Get(ref)
	if err != nil {
		return "", "", err
	}
	_, version := persona.SplitRef(ref)
	if p, err = rt.approvedPersona(p, version != ""); err != nil {
		return "", "", err
	}
	return p.Prompt(agent.SystemPrompt), p.Ref(), nil
}

// SpawnOptions configure Spawn.
type SpawnOptions struct {
	// Parent is the spawner: the agent is its child, its grants delegated
	// from the spawner's token (nil: the default process).
	Parent *kernel.Process
	// Name registers the agent's process (default: unnamed; ps shows its
	// image, "agent/<template>").
	Name string
	// Persona overrides the template's persona.
	Persona string
	// MaxSteps overrides the template's max_steps.
	MaxSteps int
}

// Template returns the nursery's template name (agents.templates). An
// unknown name is an error listing the known ones.
func (rt *Runtime) Template(name string) (AgentTemplate, error) {
	t, ok := rt.cfg.Agents.Templates[name]
	if !ok {
		known := "none is configured: add one under agents.templates in agentos.json (see " + ConfigDoc + ")"
		if names := rt.cfg.Agents.TemplateNames(); len(names) > 0 {
			known = "the known ones are " + strings.Join(names, ", ")
		}
		return AgentTemplate{}, fmt.Errorf("agentos: there is no agent template %q: %s", name, known)
	}
	return t, nil
}

// Spawn runs task as an agent spawned from the template name (the
// nursery): its persona, grants, quota, tools and step budget are the
// template's. The agent is a child of the spawner (opts.Parent, default the
// default process): its grants are delegated from the spawner's token and
// MUST NOT exceed them (a template asking for more fails to spawn, saying
// which right), and its spending is charged to the spawner too. Its model
// calls are journaled under a run of kind "agent", like RunAgent's.
func (rt *Runtime) Spawn(ctx context.Context, name, task string, opts SpawnOptions) (agent.Result, error) {
	if rt.model == nil {
		return agent.Result{}, ErrNoModel
	}
	t, err := rt.Template(name)
	if err != nil {
		return agent.Result{}, err
	}
	parent := opts.Parent
	if parent == nil {
		parent = rt.agent
	}
	grants := t.Grants
	if grants == nil {
		tok, ok := parent.Token()
		if !ok {
			return agent.Result{}, fmt.Errorf("agentos: template %q names no grants and its spawner %v holds none to pass on", name, parent.PID())
		}
		grants = tok.Grants
	}
	quota, err := t.Quota.Limits("agents.templates." + name + ".quota")
	if err != nil {
		return agent.Result{}, err
	}
	ref := opts.Persona
	if ref == "" {
		ref = t.Persona
	}
	system, used, err := rt.systemFor(ref)
	if err != nil {
		return agent.Result{}, fmt.Errorf("agentos: template %q: %w", name, err)
	}
	steps := opts.MaxSteps
	if steps == 0 {
		steps = t.MaxSteps
	}
	// Paging, lessons and distillation as for RunAgent (the memory section).
	mem, err := rt.agentMemory(opts.Name, 0, 0, false)
	if err != nil {
		return agent.Result{}, err
	}
	res, err := agent.RunProcess(ctx, task, agent.ProcessOptions{
		Node: rt.node, Model: rt.model, Journal: rt.j, PII: rt.pii,
		Name: opts.Name, Grants: grants, Quota: quota, MaxSteps: steps,
		System: system, Persona: used, Tools: t.Tools, Parent: parent, Image: TemplateImage(name),
		WindowTokens: mem.WindowTokens, ReserveTokens: mem.ReserveTokens, Lessons: mem.Lessons, Distill: mem.Distill,
	})
	if err != nil && errors.Is(err, capability.ErrAmplify) {
		return res, fmt.Errorf("agentos: template %q asks for rights its spawner (process %v) lacks: %w; a spawned agent can never do more than its spawner (add the right to the spawner's grants, or remove it from the template's)", name, parent.PID(), err)
	}
	return res, err
}

// ErrNoModel is the error of an agent or a tournament without a model.
var ErrNoModel = tournament.ErrNoModel

// TournamentKind is the journal run kind of a tournament.
const TournamentKind = tournament.Kind

// TournamentOptions configure Tournament. Persona and Tasks are required.
type TournamentOptions = tournament.Options

// TournamentReport is a tournament's outcome: the ranked table, its
// journal run, and the persona version saved when a variant won.
type TournamentReport = tournament.Report

// Tournament improves a persona (prompt evolution, see persona.Tournament
// and tournament.Runner.Start): the fittest variant, when it beats the
// baseline by more than agents.tournament.margin, is saved as the
// persona's new version (committed like a tool; its parent is the base
// version, its origin the run).
//
// The tournament runs as a child process of the default process (image
// "tournament", the llm right, agents.tournament.quota), and every model
// call and every tool score is journaled in a run of kind "tournament",
// each committed before it is used: ReplayTournament replays it with no
// model request and no scoring tool run, and ResumeTournament finishes one
// a crash interrupted, paying only for the calls never answered.
func (rt *Runtime) Tournament(ctx context.Context, opts TournamentOptions) (TournamentReport, error) {
	return rt.tournaments().Start(ctx, opts)
}

// ResumeTournament finishes a tournament a crash, a cancellation or a
// model failure (persona.ErrModel) left unfinished (tournament.Runner.Resume).
func (rt *Runtime) ResumeTournament(ctx context.Context, id string) (TournamentReport, error) {
	return rt.tournaments().Resume(ctx, id)
}

// ReplayTournament re-runs a recorded tournament offline, asking no model
// and saving nothing (tournament.Runner.Replay).
func (rt *Runtime) ReplayTournament(ctx context.Context, id string) (TournamentReport, error) {
	return rt.tournaments().Replay(ctx, id)
}

// tournaments wires a tournament runner to this node: its journal, model,
// personas and approval gate, and its processes spawned as children of the
// default process running kernel tools on the node.
func (rt *Runtime) tournaments() *tournament.Runner {
	tc := rt.cfg.Agents.Tournament
	return &tournament.Runner{
		Journal: rt.j, Model: rt.model, PII: rt.pii.ModelMiddleware(), Personas: rt.Personas(),
		Approved: rt.approvedPersona, Saved: rt.personaSaved,
		Config: tc,
		Spawn:  rt.spawnTournament,
	}
}

// spawnTournament starts a tournament's body in a child process of the
// default process (tournament.Spawn).
func (rt *Runtime) spawnTournament(body tournament.Body, image string, grants []capability.Grant, quota capability.Limits) (func() error, error) {
	p, err := rt.agent.Spawn(func(ctx context.Context, p *kernel.Process) error {
		return body(ctx, tournamentProcess{Process: p, node: rt.node})
	}, kernel.SpawnOptions{Image: image, Grants: grants, Quota: quota})
	if err != nil {
		return nil, err
	}
	return func() error {
		<-p.Done()
		if reason, _ := p.Reason(); reason.Kind != kernel.Normal {
			return fmt.Errorf("agentos: the tournament's process ended: %s", reason)
		}
		return nil
	}, nil
}

// tournamentProcess is a tournament's kernel process running the node's
// kernel tools (tournament.Process).
type tournamentProcess struct {
	*kernel.Process
	node *kerneltools.Node
}

// Call runs the kernel tool name as the process.
func (p tournamentProcess) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return p.node.Call(ctx, p.Process, name, args)
}

// TemplateImage is the image of the agents the nursery spawns from the
// template name ("agent/<name>"): ps and events show it, and the runtime
// registers agent.ImageMain under it, so that a snapshot of such an agent
// restores and resumes its run.
func TemplateImage(name string) string { return agent.Image + "/" + name }
