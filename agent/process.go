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
	"github.com/agentos-run/agentos/memory"
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
	// WindowTokens is the model's context window: the conversation is
	// paged into the node's memory (Node.Memory, under the process's
	// memory name, node.MemoryName) when it would outgrow it, and the
	// recall tool brings pages back (see Paging). 0: no paging.
	WindowTokens int
	// ReserveTokens is kept free for the answer (0: WindowTokens/8).
	ReserveTokens int
	// Lessons is how many lessons (memory kind "lesson") of a named
	// agent, relevant to the task, are recalled into its system prompt at
	// the start (0: none). The recall is a journaled call of the run.
	Lessons int
	// Distill has a finished run's transcript distilled into at most three
	// lessons (one more model call, journaled and charged like the
	// others), stored in a named agent's memory for its later runs
	// (Result.Lessons).
	Distill bool
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
	p, err := opts.Node.Kernel().Spawn(func(ctx context.Context, p *kernel.Process) error {
		// The agent stops when its process ends or its caller gives up.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(callerCtx, cancel)
		defer stop()
		tools, err := opts.Node.Tools(p)
		if err != nil {
			return err
		}
		mux := driver.Mux{llm.Driver: opts.Model}
		store := opts.Node.Memory()
		if store != nil {
			mux[memory.Driver] = memory.LessonsDevice(store)
		}
		// The lessons are tokenized below the journal, like a data
		// driver's answers: an operator's lesson may hold personal data.
		var host driver.Host = driver.Chain(mux, opts.PII.Middleware(memory.Driver))
		// The task is journaled and sent to the model: tokenized first.
		if task, err = opts.PII.Text(task); err != nil {
			return err
		}
		args, _ := json.Marshal(map[string]string{"task": task})
		run, err := opts.Journal.Begin(journal.RunMeta{Kind: "agent", Args: args})
		if err != nil {
			return err
		}
		host = driver.Chain(host, renumber(), opts.PII.ModelMiddleware(), run.Durable().Middleware())
		named := p.Name() != "" && store != nil
		system := SystemPrompt
		if named && opts.Lessons > 0 {
			lessons, err := RecallLessons(ctx, host, 0, []string{p.Name()}, task, opts.Lessons)
			if err != nil {
				_ = run.End(journal.StatusFailed, nil, nil)
				return err
			}
			system = WithLessons(system, lessons)
		}
		charge := func(u llm.Usage) error {
			if err := p.Charge(capability.LLMTokens, float64(u.TotalTokens)); err != nil {
				return err
			}
			return p.Charge(capability.CostUSD, u.CostUSD)
		}
		paging, err := processPaging(opts, p, run.ID())
		if err != nil {
			_ = run.End(journal.StatusFailed, nil, nil)
			return err
		}
		res, runErr = Run(ctx, Options{LLM: host, Tools: tools, System: system, MaxSteps: opts.MaxSteps, PII: opts.PII, Paging: paging, Charge: charge}, task)
		if runErr == nil && opts.Distill && named && res.Reason == ReasonAnswer {
			runErr = distill(ctx, host, store, p.Name(), run.ID(), task, &res, charge)
		}
		if store := opts.Node.Memory(); store != nil {
			store.Drop(node.MemoryName(p)) // a process without a name: its memory ends with it
		}
		out, _ := json.Marshal(res)
		status := journal.StatusOK
		if runErr != nil {
			status = journal.StatusFailed
		}
		_ = run.End(status, out, nil)
		return runErr
	}, kernel.SpawnOptions{Name: opts.Name, Image: "agent", Grants: grants, Quota: opts.Quota})
	if err != nil {
		return Result{}, err
	}
	// Wait for the process itself, so that res is complete (the caller's
	// ctx ending cancels the agent, which then ends).
	<-p.Done()
	reason, _ := p.Reason()
	if runErr == nil && reason.Kind != kernel.Normal {
		runErr = fmt.Errorf("agentos: the agent process ended: %s", reason)
	}
	return res, runErr
}

// processPaging is the paging of an agent process: its pages go to the
// node's memory under the process's memory name, tagged "page" and with
// the tools the turn called, and carry the agent's run id.
func processPaging(opts ProcessOptions, p *kernel.Process, run string) (Paging, error) {
	if opts.WindowTokens <= 0 {
		return Paging{}, nil
	}
	store := opts.Node.Memory()
	if store == nil {
		return Paging{}, errors.New("agent: WindowTokens is set but the node has no memory store to page into (node.Options.Memory)")
	}
	name := node.MemoryName(p)
	return Paging{WindowTokens: opts.WindowTokens, ReserveTokens: opts.ReserveTokens, PageOut: func(_ context.Context, pages []Page) ([]string, error) {
		items := make([]memory.Item, len(pages))
		for i, pg := range pages {
			items[i] = memory.Item{Kind: memory.Page, Text: pg.Text, Tags: append([]string{"page"}, pg.Tools...), Run: run}
		}
		stored, _, err := store.RememberAll(name, items)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(stored))
		for i, it := range stored {
			ids[i] = it.ID
		}
		return ids, nil
	}}, nil
}

// distill stores the lessons of the finished run res in agent's memory.
func distill(ctx context.Context, host driver.Host, store *memory.Store, agent, run, task string, res *Result, charge func(llm.Usage) error) error {
	lessons, usage, err := Distill(ctx, host, 0, Transcript(task, *res))
	if err != nil {
		return err
	}
	res.Usage.PromptTokens += usage.PromptTokens
	res.Usage.CompletionTokens += usage.CompletionTokens
	res.Usage.TotalTokens += usage.TotalTokens
	res.Usage.CostUSD += usage.CostUSD
	if err := charge(usage); err != nil {
		return err
	}
	items := make([]memory.Item, len(lessons))
	for i, l := range lessons {
		items[i] = memory.Item{Kind: memory.Lesson, Text: l, Tags: []string{"distilled"}, Run: run}
	}
	if _, _, err := store.RememberAll(agent, items); err != nil {
		return fmt.Errorf("agent: keeping the distilled lessons: %w", err)
	}
	res.Lessons = lessons
	return nil
}
