package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/node"
	"github.com/agentos-run/agentos/pii"
)

// ProcessOptions configure RunProcess. Node, Model and Journal are
// required.
type ProcessOptions struct {
	// Node is the booted node whose kernel spawns the agent's process and
	// whose kernel tools it calls.
	Node *node.Node
	// Model is the LLM device (llm.Client.Device()).
	Model driver.Device
	// Journal records the agent's model calls under a run of kind "agent".
	Journal *journal.Journal
	// Name registers the agent's process.
	Name string
	// Grants are its rights; the llm right is added when missing.
	Grants []capability.Grant
	// Quota limits it (its llm_tokens and cost_usd are charged per answer).
	Quota capability.Limits
	// MaxSteps bounds its model requests (0: 20).
	MaxSteps int
	// PII tokenizes what reaches its model: the tool results (Options.PII)
	// and every chat request, above the journal, so that the journal
	// records tokens only. nil: nothing is tokenized.
	PII *pii.Tokenizer
	// System is the system prompt (Options.System; "": SystemPrompt), e.g.
	// a persona's (see package persona).
	System string
	// Persona names the persona System came from ("name@version"), kept in
	// the journaled run's arguments. "": none.
	Persona string
	// Tools names the kernel tools the agent is given (nil: all of them).
	Tools []string
	// Parent, when set, spawns the agent as its child: Grants are then
	// delegated from the parent's token and MUST NOT exceed them (the
	// spawn fails otherwise), its quota account is a child of the
	// parent's, and the parent needs the spawn right. nil: the kernel
	// spawns it with Grants as given.
	Parent *kernel.Process
	// Image names the process's image in ps and events ("": "agent").
	Image string
}

// RunProcess runs task as a new agent process of opts.Node: Run, with the
// kernel tools bound to that process (its capabilities, its quota), each
// answer's usage charged to its llm_tokens and cost_usd, and its model
// calls journaled under a run of kind "agent" (ended ok or failed with the
// Result).
//
// IMPORTANT: it returns when the process has ended, so the Result is
// complete; ctx ending cancels the agent, which then ends. A process that
// ends other than normally (killed, over its quota) is an error even when
// the loop itself reported none.
func RunProcess(ctx context.Context, task string, opts ProcessOptions) (Result, error) {
	if opts.Node == nil || opts.Model == nil || opts.Journal == nil {
		return Result{}, errors.New("agent: RunProcess needs a Node, a Model and a Journal")
	}
	grants := opts.Grants
	if !slices.ContainsFunc(grants, func(g capability.Grant) bool { return g.Right == capability.LLM }) {
		grants = append(slices.Clone(grants), capability.Grant{Right: capability.LLM})
	}
	var res Result
	var runErr error
	callerCtx := ctx
	image := opts.Image
	if image == "" {
		image = "agent"
	}
	spawn := opts.Node.Kernel().Spawn
	if opts.Parent != nil {
		spawn = opts.Parent.Spawn
	}
	finished := make(chan struct{}) // closed when the body has returned: res is then complete
	p, err := spawn(func(ctx context.Context, p *kernel.Process) error {
		defer close(finished)
		// The agent stops when its process ends or its caller gives up.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(callerCtx, cancel)
		defer stop()
		tools, err := opts.Node.Tools(p, opts.Tools...)
		if err != nil {
			return err
		}
		var host driver.Host = driver.Mux{llm.Driver: opts.Model}
		// The task is journaled and sent to the model: tokenized first.
		if task, err = opts.PII.Text(task); err != nil {
			return err
		}
		meta := map[string]string{"task": task}
		if opts.Persona != "" {
			meta["persona"] = opts.Persona
		}
		args, _ := json.Marshal(meta)
		run, err := opts.Journal.Begin(journal.RunMeta{Kind: "agent", Args: args})
		if err != nil {
			return err
		}
		host = driver.Chain(host, opts.PII.ModelMiddleware(), run.Durable().Middleware())
		res, runErr = Run(ctx, Options{LLM: host, Tools: tools, System: opts.System, MaxSteps: opts.MaxSteps, PII: opts.PII, Charge: func(u llm.Usage) error {
			if err := p.Charge(capability.LLMTokens, float64(u.TotalTokens)); err != nil {
				return err
			}
			return p.Charge(capability.CostUSD, u.CostUSD)
		}}, task)
		out, _ := json.Marshal(res)
		status := journal.StatusOK
		if runErr != nil {
			status = journal.StatusFailed
		}
		_ = run.End(status, out, nil)
		return runErr
	}, kernel.SpawnOptions{Name: opts.Name, Image: image, Grants: grants, Quota: opts.Quota})
	if err != nil {
		return Result{}, err
	}
	// Wait for the body itself, so that res is complete: a process ended
	// from outside (killed, over its quota) is done before its body has
	// returned (the caller's ctx ending cancels the agent, which then ends).
	<-finished
	<-p.Done()
	reason, _ := p.Reason()
	if runErr == nil && reason.Kind != kernel.Normal {
		runErr = fmt.Errorf("agentos: the agent process ended: %s", reason)
	}
	return res, runErr
}
