package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/persona"
	"github.com/agentos-run/agentos/vfs"
)

// startRuntime starts a runtime over the tool root for one command.
func startRuntime(ctx context.Context, root string) (*host.Runtime, error) {
	abs, cfg, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	cfg.Root = abs
	cfg.Logger = cmdLogger(ctx)
	return host.Start(ctx, cfg)
}

// readOnlyPersonas opens the personas of a tool root without starting a
// runtime (list, show, versions read files only).
func readOnlyPersonas(root string) (*persona.Store, func(), error) {
	abs, cfg, err := openRoot(root)
	if err != nil {
		return nil, nil, err
	}
	j, err := vfs.Open(abs)
	if err != nil {
		return nil, nil, err
	}
	return &persona.Store{Dir: cfg.Agents.Personas(), FS: j}, func() { _ = j.Close() }, nil
}

// personaApprovals returns the approval requests of the persona file
// path's versions, by version (none when the approvals file cannot be read).
func personaApprovals(root, path string) map[string]approval.Request {
	out := map[string]approval.Request{}
	abs, _, err := openRoot(root)
	if err != nil {
		return out
	}
	rs, _ := host.ListOffline(abs, "")
	for _, r := range rs {
		if r.Path == path {
			out[r.Hash] = r
		}
	}
	return out
}

// runPersona: agentos persona list | show NAME[@VERSION] | versions NAME |
// set NAME (--file F | --text T | -) | set NAME@VERSION.
func runPersona(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("persona", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object")
	file := fs.String("file", "", "set: read the system prompt from `FILE` (a front matter is allowed; - for stdin)")
	text := fs.String("text", "", "set: the system prompt `TEXT`")
	desc := fs.String("description", "", "set: one line saying what the persona is for")
	noProtocol := fs.Bool("no-protocol", false, "set: send the prompt alone, without the kernel-tools protocol after it")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("expected an action: list, show NAME[@VERSION], versions NAME, set NAME")
	}
	action, rest := pos[0], pos[1:]
	switch action {
	case "list", "show", "versions":
		st, closeFn, err := readOnlyPersonas(*root)
		if err != nil {
			return err
		}
		defer closeFn()
		return personaRead(st, *root, action, rest, *asJSON, stdout)
	case "set":
	default:
		return usagef("unknown persona action %q: use list, show, versions or set", action)
	}
	if len(rest) != 1 {
		return usagef("set takes one NAME (or NAME@VERSION to make that version current again)")
	}
	name, version := persona.SplitRef(rest[0])
	if err := persona.CheckName(name); err != nil {
		return usagef("%v", err)
	}
	p, err := personaPrompt(version, *file, *text)
	if err != nil {
		return err
	}
	rt, err := startRuntime(ctx, *root)
	if err != nil {
		return err
	}
	defer rt.Close()
	var saved persona.Persona
	if version != "" {
		saved, err = rt.UsePersona(ctx, rest[0])
	} else {
		saved, err = saveNewPersona(ctx, rt, p, name, *desc, *noProtocol)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return fprintJSON(stdout, saved)
	}
	fmt.Fprintf(stdout, "persona %s is now version %s (%s)\n", saved.Name, saved.Version, rt.Personas().CurrentPath(saved.Name))
	return nil
}

// personaPrompt returns the prompt persona set saves, from --file (- for
// stdin) or --text. A set NAME@VERSION (version given) takes neither: it
// makes a saved version current again.
func personaPrompt(version, file, text string) (persona.Persona, error) {
	switch {
	case version != "":
		if file != "" || text != "" {
			return persona.Persona{}, usagef("set NAME@VERSION makes a saved version current again: give no --file or --text")
		}
		return persona.Persona{}, nil
	case file != "" && text != "":
		return persona.Persona{}, usagef("give the prompt once: --file or --text")
	case file != "":
		return readPersonaFile(file)
	case text != "":
		return persona.Persona{System: text}, nil
	}
	return persona.Persona{}, usagef("set needs the prompt: --file FILE, --file - (stdin) or --text TEXT")
}

// readPersonaFile parses the prompt file (- for stdin), which may carry a
// front matter.
func readPersonaFile(file string) (persona.Persona, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return persona.Persona{}, usagef("reading the prompt: %v", err)
	}
	p, err := persona.Parse(file, b)
	if err != nil {
		return persona.Persona{}, usagef("%v", err)
	}
	return p, nil
}

// saveNewPersona saves p as the next version of persona name. Its parent
// is the current version, whose description it keeps unless desc (or the
// prompt's front matter) gives one.
func saveNewPersona(ctx context.Context, rt *host.Runtime, p persona.Persona, name, desc string, noProtocol bool) (persona.Persona, error) {
	p.Name, p.Origin, p.Parent, p.Created = name, "", "", time.Time{} // set by the save
	if desc != "" {
		p.Description = desc
	}
	if noProtocol {
		p.NoProtocol = true
	}
	if cur, err := rt.Personas().Get(name); err == nil {
		p.Parent = cur.Version
		if p.Description == "" {
			p.Description = cur.Description
		}
	}
	return rt.SavePersona(ctx, p)
}

// personaRead runs the actions that only read the personas: list, show
// and versions.
func personaRead(st *persona.Store, root, action string, rest []string, asJSON bool, stdout io.Writer) error {
	switch action {
	case "list":
		return personaList(st, rest, asJSON, stdout)
	case "show":
		return personaShow(st, rest, asJSON, stdout)
	default:
		return personaVersions(st, root, rest, asJSON, stdout)
	}
}

// personaList prints every persona's current version.
func personaList(st *persona.Store, rest []string, asJSON bool, stdout io.Writer) error {
	if len(rest) != 0 {
		return usagef("list takes no arguments")
	}
	ps, err := st.List()
	ps = nonNilSlice(ps)
	if asJSON {
		if jerr := fprintJSON(stdout, map[string]any{"personas": ps}); jerr != nil {
			return jerr
		}
		return err
	}
	if len(ps) == 0 && err == nil {
		fmt.Fprintln(stdout, "no personas yet: write one with 'agentos persona set NAME --file PROMPT.md'")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tCREATED\tORIGIN\tDESCRIPTION")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Version, timeOrDash(p.Created, "2006-01-02 15:04"), orDash(p.Origin), p.Description)
	}
	_ = tw.Flush()
	return err
}

// personaShow prints one persona version as its file reads.
func personaShow(st *persona.Store, rest []string, asJSON bool, stdout io.Writer) error {
	if len(rest) != 1 {
		return usagef("show takes one NAME or NAME@VERSION")
	}
	p, err := st.Get(rest[0])
	if err != nil {
		return notFoundUsage(err)
	}
	if asJSON {
		return fprintJSON(stdout, p)
	}
	_, err = stdout.Write(persona.Format(p))
	return err
}

// personaVersions prints a persona's versions with the approval of each.
func personaVersions(st *persona.Store, root string, rest []string, asJSON bool, stdout io.Writer) error {
	if len(rest) != 1 {
		return usagef("versions takes one NAME")
	}
	if _, err := st.Get(rest[0]); err != nil {
		return notFoundUsage(err)
	}
	vs, err := st.Versions(rest[0])
	if err != nil {
		return err
	}
	cur, _ := st.Get(rest[0])
	approvals := personaApprovals(root, st.CurrentPath(rest[0]))
	if asJSON {
		type version struct {
			persona.Persona
			Approval *approval.Request `json:"approval,omitempty"`
		}
		out := make([]version, len(vs))
		for i, v := range vs {
			out[i] = version{Persona: v}
			if r, ok := approvals[v.Version]; ok {
				out[i].Approval = &r
			}
		}
		return fprintJSON(stdout, map[string]any{"current": cur.Version, "versions": out})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tCREATED\tPARENT\tORIGIN\tAPPROVAL\tFROM\t")
	for _, v := range vs {
		mark := ""
		if v.Version == cur.Version {
			mark = "(current)"
		}
		state, from := versionApproval(st, root, v, cur.Version, approvals)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Version, timeOrDash(v.Created, "2006-01-02 15:04:05"), orDash(v.Parent), orDash(v.Origin), state, from, mark)
	}
	return tw.Flush()
}

// versionApproval is a persona version's approval state and who asked for
// it: the approval request's, else "unapproved", from the author of the
// persona file for the current version.
func versionApproval(st *persona.Store, root string, v persona.Persona, current string, approvals map[string]approval.Request) (state, from string) {
	if r, ok := approvals[v.Version]; ok {
		return string(r.State), orDash(r.RequestedBy)
	}
	from = "-"
	if v.Version == current {
		if abs, _, err := openRoot(root); err == nil {
			a, _ := host.FileAuthor(abs, st.CurrentPath(v.Name))
			from = orDash(a)
		}
	}
	return "unapproved", from
}

// timeOrDash formats t by layout, or "-" when it is not set.
func timeOrDash(t time.Time, layout string) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(layout)
}

// notFoundUsage makes an unknown persona a usage error (exit 2).
func notFoundUsage(err error) error {
	if errors.Is(err, persona.ErrNotFound) || errors.Is(err, persona.ErrInvalid) {
		return usagef("%v", err)
	}
	return err
}

// runTournament: agentos tournament --persona P --tasks F [--variants N]
// [--dry-run] | --resume RUN | --replay RUN.
func runTournament(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tournament", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object: the report")
	ref := fs.String("persona", "", "the base persona `NAME` (or NAME@VERSION)")
	tasks := fs.String("tasks", "", "the task set `FILE` (JSON: {\"scorer\": {\"kind\": \"exact|contains|regex|tool\"}, \"tasks\": [{\"id\", \"input\", \"expected\"}]})")
	variants := fs.Int("variants", 0, "how many variants the model writes (default: agents.tournament.variants, else 3)")
	dry := fs.Bool("dry-run", false, "report without saving the winner")
	resume := fs.String("resume", "", "finish the tournament `RUN` a crash interrupted (its answers are not asked again)")
	replay := fs.String("replay", "", "replay the tournament `RUN` from the journal: no model request, nothing saved")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected arguments %q: the persona and tasks are flags (--persona P --tasks F)", pos)
	}
	ts, err := tournamentTasks(*ref, *tasks, *resume, *replay)
	if err != nil {
		return err
	}
	rt, err := startRuntime(ctx, *root)
	if err != nil {
		return err
	}
	defer rt.Close()
	var rep host.TournamentReport
	switch {
	case *resume != "":
		rep, err = rt.ResumeTournament(ctx, *resume)
	case *replay != "":
		rep, err = rt.ReplayTournament(ctx, *replay)
	default:
		if _, gerr := rt.Personas().Get(*ref); gerr != nil {
			return notFoundUsage(gerr)
		}
		rep, err = rt.Tournament(ctx, host.TournamentOptions{Persona: *ref, Tasks: ts, Variants: *variants, DryRun: *dry})
	}
	if err != nil {
		err = quotaHint(err)
		if meta, gerr := rt.Journal().Get(rep.Run); rep.Run != "" && *replay == "" && gerr == nil && meta.Status == journal.StatusRunning {
			err = fmt.Errorf("%w (tournament %s; resume it with 'agentos tournament --resume %s')", err, rep.Run, rep.Run)
		}
		return err
	}
	if *asJSON {
		return fprintJSON(stdout, rep)
	}
	printTournament(stdout, rep)
	return nil
}

// tournamentTasks checks that exactly one mode is given (--persona with
// --tasks, --resume or --replay) and reads the task set of a new
// tournament (none for the other modes).
func tournamentTasks(ref, tasks, resume, replay string) (persona.TaskSet, error) {
	modes := 0
	for _, s := range []string{resume, replay} {
		if s != "" {
			modes++
		}
	}
	if ref != "" || tasks != "" {
		modes++
	}
	if modes != 1 {
		return persona.TaskSet{}, usagef("give either --persona P --tasks F, or --resume RUN, or --replay RUN")
	}
	switch {
	case ref == "" && tasks != "":
		return persona.TaskSet{}, usagef("--persona NAME is required with --tasks")
	case ref == "":
		return persona.TaskSet{}, nil
	case tasks == "":
		return persona.TaskSet{}, usagef("--tasks FILE is required with --persona")
	}
	b, err := os.ReadFile(tasks)
	if err != nil {
		return persona.TaskSet{}, usagef("reading the task set: %v", err)
	}
	ts, err := persona.ParseTasks(filepath.Base(tasks), b)
	if err != nil {
		return persona.TaskSet{}, usagef("%v", err)
	}
	return ts, nil
}

// printTournament prints a tournament's score table and what became of
// its winner.
func printTournament(stdout io.Writer, rep host.TournamentReport) {
	what := "tournament"
	if rep.Replayed {
		what = "replayed tournament (every answer from the journal)"
	}
	fmt.Fprintf(stdout, "%s %s of %s: %d model calls\n\n%s\n", what, rep.Run, rep.Base, rep.Calls, rep.Table())
	switch {
	case rep.Saved != nil:
		fmt.Fprintf(stdout, "%s won: saved as persona %s version %s (parent %s)\n", rep.Winner, rep.Saved.Name, rep.Saved.Version, rep.Saved.Parent)
	case rep.Improved:
		fmt.Fprintf(stdout, "%s won (not saved: dry run or replay)\n", rep.Winner)
	default:
		fmt.Fprintln(stdout, "the baseline stays: no variant beat it by more than agents.tournament.margin")
	}
}

// runSpawn: agentos spawn TEMPLATE TASK | spawn --list.
func runSpawn(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("spawn", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object: the agent's result")
	list := fs.Bool("list", false, "list the templates (agents.templates) instead")
	name := fs.String("name", "", "register the agent's process under `NAME`")
	ref := fs.String("persona", "", "override the template's persona (`NAME` or NAME@VERSION)")
	steps := fs.Int("max-steps", 0, "override the template's max_steps")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *list {
		return listTemplates(*root, *asJSON, stdout)
	}
	if len(pos) != 2 || strings.TrimSpace(pos[1]) == "" {
		return usagef("expected TEMPLATE and TASK (in quotes); 'agentos spawn --list' lists the templates")
	}
	rt, err := startRuntime(ctx, *root)
	if err != nil {
		return err
	}
	defer rt.Close()
	if _, err := rt.Template(pos[0]); err != nil {
		return usagef("%v", err)
	}
	res, err := rt.Spawn(ctx, pos[0], pos[1], host.SpawnOptions{Name: *name, Persona: *ref, MaxSteps: *steps})
	return printAgent(stdout, res, err, *asJSON)
}

// listTemplates prints the agent templates of agentos.json
// (agents.templates).
func listTemplates(root string, asJSON bool, stdout io.Writer) error {
	_, cfg, err := openRoot(root)
	if err != nil {
		return err
	}
	if asJSON {
		t := cfg.Agents.Templates
		if t == nil {
			t = map[string]host.AgentTemplate{}
		}
		return fprintJSON(stdout, map[string]any{"templates": t})
	}
	if len(cfg.Agents.Templates) == 0 {
		fmt.Fprintf(stdout, "no templates: add them under agents.templates in agentos.json (see %s)\n", host.ConfigDoc)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEMPLATE\tPERSONA\tGRANTS\tQUOTA\tDESCRIPTION")
	for _, n := range cfg.Agents.TemplateNames() {
		t := cfg.Agents.Templates[n]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n, orDash(t.Persona), templateGrants(t), orDash(templateQuota(t)), t.Description)
	}
	return tw.Flush()
}

// templateGrants is a template's grants as RIGHT:SCOPE,... or "the
// spawner's" when it names none (the agent inherits its spawner's).
func templateGrants(t host.AgentTemplate) string {
	if t.Grants == nil {
		return "the spawner's"
	}
	var gs []string
	for _, g := range t.Grants {
		gs = append(gs, strings.TrimSuffix(string(g.Right)+":"+g.Scope, ":"))
	}
	return strings.Join(gs, ",")
}

// templateQuota is a template's quota as METER=LIMIT,...
func templateQuota(t host.AgentTemplate) string {
	var qs []string
	for m, v := range t.Quota {
		qs = append(qs, fmt.Sprintf("%s=%g", m, v))
	}
	return strings.Join(qs, ",")
}

// runAgent: agentos agent [--persona P] TASK.
func runAgent(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object: the agent's result")
	ref := fs.String("persona", "", "the agent's persona (`NAME` or NAME@VERSION; default agents.persona)")
	name := fs.String("name", "", "register the agent's process under `NAME`")
	steps := fs.Int("max-steps", 0, "bound its model requests (default 20)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return usagef("expected one TASK, in quotes")
	}
	rt, err := startRuntime(ctx, *root)
	if err != nil {
		return err
	}
	defer rt.Close()
	res, err := rt.RunAgent(ctx, pos[0], host.AgentOptions{Name: *name, Persona: *ref, MaxSteps: *steps})
	if errors.Is(err, persona.ErrNotFound) {
		return usagef("%v", err)
	}
	return printAgent(stdout, res, err, *asJSON)
}

func printAgent(stdout io.Writer, res agent.Result, err error, asJSON bool) error {
	if err != nil {
		return quotaHint(err)
	}
	if asJSON {
		if err := fprintJSON(stdout, res); err != nil {
			return err
		}
		if res.Reason != agent.ReasonAnswer {
			return errFailed // the result says why (reason), the status that it failed
		}
		return nil
	}
	for _, c := range res.Calls {
		status := "ok"
		if c.Error != "" {
			status = "error: " + c.Error
		}
		fmt.Fprintf(stdout, "- %s %s: %s\n", c.Tool, c.Arguments, status)
	}
	if res.Reason != agent.ReasonAnswer {
		fmt.Fprintf(stdout, "the agent stopped without an answer (%s) after %d steps\n", res.Reason, res.Steps)
		return errFailed
	}
	fmt.Fprintln(stdout, res.Answer)
	return nil
}
