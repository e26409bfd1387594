// Command agentos is the terminal interface of the agentos runtime.
//
//	agentos init  [--upstream URL | --no-git] [DIR]      scaffold a tool root
//	agentos check [--root DIR] [--json] [--against-runs [N]] PATH
//	                                                     static analysis of a tool; with
//	                                                     --against-runs, replay the previous
//	                                                     version's recorded runs against it
//	agentos exec  [--root DIR] [--json] [--timeout D] [--inprocess] [--journal PATH | --no-journal]
//	              PATH [ARGS_JSON | - | @FILE]           run a tool in the sandbox
//	agentos runs    [--root DIR] [--json] [--limit N] [--before ID | --after ID] [--tool PATH]
//	                                                     list the recorded runs, a page at a time
//	agentos runs prune [--older-than D] [--keep N] [--keep-bytes N] [--no-compact]
//	                                                     delete old runs, compact the journal
//	agentos trace   [--root DIR] [--json] RUN            a run call by call
//	agentos replay  [--root DIR] [--json] [--tool F] RUN re-run offline (or a patched tool)
//	agentos recover [--root DIR] [--json] [--run ID]     resume runs a crash interrupted
//	agentos call    [--root DIR] [--json] TOOL ARGS_JSON|-|@FILE a kernel tool, as an LLM calls it
//	agentos forge   [--root DIR] [--json] SPEC           reuse or forge a tool with the model
//	agentos agent   [--root DIR] [--json] [--persona P] TASK  run an agent (a model calling the kernel tools)
//	agentos spawn   [--root DIR] [--json] TEMPLATE TASK | --list  run an agent from a template (the nursery)
//	agentos persona list | show NAME[@V] | versions NAME | set NAME (--file F | --text T) | set NAME@V
//	                                                     the personas: named, versioned system prompts
//	agentos tournament --persona P --tasks F [--variants N] | --resume RUN | --replay RUN
//	                                                     evolve a persona's prompt against a task set
//	agentos serve   [--root DIR] [--metrics ADDR] [--cluster ...] run a node until SIGTERM
//	agentos serve --mcp | --mcp-http ADDR               ... and serve its tools over MCP (stdio, HTTP)
//	agentos token   [--root DIR] [--json] [--grant R:S]... [--ttl D] a capability token (MCP over HTTP)
//	agentos token revoke [--holder] [--force] ID|HOLDER|TOKEN  revoke tokens on every node, durably
//	agentos token list   [--root DIR] [--json]           the tokens minted here, and the revocations
//	agentos cluster status [--root DIR] [--json]         the serving node's cluster
//	agentos cluster certs --dir DIR --node NAME[,...]    a CA and node certificates (mutual TLS)
//	agentos ps      [--root DIR] [--json]                the serving node's processes
//	agentos events  [--root DIR] [--json]                the serving node's recent kernel events
//	agentos quota   [--root DIR] [--json] [reset [ACCOUNT...]] quota use kept across invocations
//	agentos demo  [--dir DIR]                            write, check and run sample tools
//	agentos version [--root DIR] [--json]                the build and the sandbox's protections
//
// agentos --help (or COMMAND --help) lists every flag with its description;
// the help is printed from the flag sets the commands really parse.
//
// The tool root is --root, or the nearest directory holding agentos.json
// from the current one up. A command that keeps state in the tool root
// MUST NOT create it where there is no agentos.json: it refuses (exit 2)
// with what to do; check and exec --no-journal work anywhere.
//
// ARGS_JSON is inline JSON, "-" (stdin) or "@FILE", at most
// limits.max_args_bytes. Durations are Go durations, days (7d) or a bare
// number of seconds, and MUST be positive.
//
// Logging (every command, before or after its name): warnings and errors on
// stderr by default; -v/--verbose adds INFO, -v -v debug, --quiet leaves
// errors only, --log-level LEVEL sets it. run sets up the one logger.
//
// With --json a command prints exactly one JSON object on stdout, in every
// case: its result (lists wrapped, e.g. {"runs": [...]}) or
// {"error": {"kind": "usage"|"failed", "message": "..."}}.
//
// Exit status: 0 on success, 1 when a tool is invalid or its run failed, 2 on
// a usage error (unknown flag, missing argument, malformed JSON, missing
// file, not a tool root). Errors are one line that says what to do, naming
// the command once ("agentos ps: ..."): the library's "agentos: " prefix is
// not repeated.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/cmd/agentos/internal/quickhelp"
	_ "github.com/agentos-run/agentos/cmd/agentos/internal/quickworker" // serves a worker before the other inits
)

func main() {
	executor.WorkerMain() // a sandbox worker is this binary re-executed
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"init", "scaffold a tool root (config, tools/, registry, Git upstream); safe to run twice", "agentos init [--upstream URL | --no-git] [DIR]", runInit},
	{"check", "check a tool: syntax, the standards, risk level; with --against-runs, replay its previous version's recorded runs against it", "agentos check [--root DIR] [--json] [--against-runs [N]] PATH", runCheck},
	{"exec", "run a tool in the sandbox with JSON args; PATH@HASH runs a recorded version", "agentos exec [--root DIR] [--json] [--timeout D] [--inprocess] [--journal PATH | --no-journal] PATH[@HASH] [ARGS_JSON | - | @FILE]", runExec},
	{"runs", "list the recorded runs, the newest 50 by default (--limit, --before and --after page; --tool: one tool's runs by version); 'prune' deletes old ones (default: the configured retention) and compacts the journal", "agentos runs [--root DIR] [--json] [--limit N] [--before ID | --after ID] [--tool PATH] | runs prune [--older-than D] [--keep N] [--keep-bytes N] [--no-compact]", runRuns},
	{"trace", "show a recorded run call by call", "agentos trace [--root DIR] [--json] RUN", runTrace},
	{"replay", "re-run a recorded run (a tool run or a forge) offline, or feed its I/O to a patched tool", "agentos replay [--root DIR] [--json] [--tool PATCHED.ts] [--timeout D] [--attempts N] RUN", runReplay},
	{"recover", "resume the runs a crash left unfinished", "agentos recover [--root DIR] [--json] [--run ID] [--timeout D]", runRecover},
	{"call", "call a kernel tool as an LLM would (on the serving node, or a runtime started for it)", "agentos call [--root DIR] [--json] TOOL ARGS_JSON | - | @FILE", runCall},
	{"forge", "reuse or forge a tool for a spec with the configured model", "agentos forge [--root DIR] [--json] SPEC", runForge},
	{"agent", "run an agent: a model calling the kernel tools with the default grants, under a persona", "agentos agent [--root DIR] [--json] [--persona NAME[@VERSION]] [--name N] [--max-steps N] TASK", runAgent},
	{"spawn", "run an agent from a template of agents.templates (persona, grants, quota, tools), its rights delegated from the default process", "agentos spawn [--root DIR] [--json] [--name N] [--persona P] [--max-steps N] TEMPLATE TASK | spawn --list", runSpawn},
	{"persona", "the personas (named, versioned system prompts in the tool root, committed like tools): list, show, versions, set", "agentos persona [--root DIR] [--json] list | show NAME[@VERSION] | versions NAME | set NAME (--file F | --text T) [--description D] [--no-protocol] | set NAME@VERSION", runPersona},
	{"tournament", "evolve a persona: the model writes variants, each is scored on a task set (score, tokens, cost, time), the fittest is saved; journaled, so it replays offline and resumes", "agentos tournament [--root DIR] [--json] --persona P --tasks FILE [--variants N] [--dry-run] | --resume RUN | --replay RUN", runTournament},
	{"serve", "run a node until SIGTERM: processes, actors, journal; every other command goes through it while it serves", "agentos serve [--root DIR] [--metrics ADDR] [--mcp] [--mcp-http ADDR] [--cluster [--cluster-name N] [--cluster-port P] [--health-port P] [--seeds H:P,...] [--etcd URL,...]]", runServe},
	{"token", "mint a capability token with the node's signing key, e.g. the bearer token of an MCP client of 'serve --mcp-http'; 'revoke' revokes one (by id, holder or token) on every node, durably; 'list' lists those minted here", "agentos token [--root DIR] [--json] [--grant RIGHT[:SCOPE]]... [--ttl D] [--holder NAME] | token revoke [--holder] [--force] ID|HOLDER|TOKEN | token list", runToken},
	{"cluster", "the serving node's cluster: its members, their versions, what each hosts; or the certificates of a deployment (certs)", "agentos cluster status [--root DIR] [--json] | agentos cluster certs --dir DIR --node NAME[,NAME...] [--host H,...] [--days N] [--json]", runCluster},
	{"ps", "the process table of the serving node", "agentos ps [--root DIR] [--json] [--cluster]", runPS},
	{"events", "the recent kernel events of the serving node", "agentos events [--root DIR] [--json] [--cluster]", runEvents},
	{"kill", "signal a process of the serving node: kill (default), term, stop or cont", "agentos kill [--root DIR] [--signal SIG] PID", runKill},
	{"snapshot", "snapshot a process of the serving node (mailbox, rights, budget left, state) into the journal", "agentos snapshot [--root DIR] [--json] [--kill] PID|NAME", runSnapshot},
	{"restore", "start a snapshot again, once, as a process of the serving node, with the same rights and budget left (--fork: a copy)", "agentos restore [--root DIR] [--json] [--name NAME] [--fork] SNAPSHOT_ID", runRestore},
	{"approve", "approve (or --deny --reason R) a tool version waiting at the approval gate, by request id or tool path; --list the pending ones", "agentos approve [--root DIR] [--json] [--deny] [--reason R] RUN|TOOL | approve --list", runApprove},
	{"approvals", "list the approval requests of the approval gate (default: the pending ones)", "agentos approvals [--root DIR] [--json] [--all | --state S]", runApprovals},
	{"quota", "show the quota use kept across invocations, or reset it", "agentos quota [--root DIR] [--json] [reset [ACCOUNT...]]", runQuota},
	{"memory", "the agents' long-term memory: list, show, recall, remember, forget (through the serving node)", "agentos memory [--root DIR] [--json] [list [--kind KIND] AGENT | show AGENT ID... | recall [--kind KIND] [--limit N] AGENT QUERY... | remember [--kind KIND] [--tag TAG]... AGENT TEXT... | forget AGENT ID...]", runMemory},
	{"doctor", "probe the configured model (3 small billed requests): reachable, tool calls through the API or as text, parallel calls, context window, speed, and what agentos does about each", "agentos doctor [--root DIR] [--json] llm", runDoctor},
	{"demo", "write sample tools into a fresh tool root, check and run them", "agentos demo [--dir DIR] [--keep] [--cluster [--json]]", runDemo},
	{"version", "the build, and which OS protections sandbox workers have on this machine (also --version)", "agentos version [--root DIR] [--json]", runVersion},
}

// subcommands are the commands' subcommands with flags of their own, which
// the global help lists after their command's.
var subcommands = map[string][]string{"runs": {"prune"}, "token": {"revoke", "list"}}

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// usageError is a mistake in how the command was called: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// failed means the command ran and reported a failure itself: exit status 1.
var errFailed = errors.New("failed")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args = moveLeadingFlags(args)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	if args[0] == demoCrashChild {
		return runDemoCrashChild(ctx, args[1:])
	}
	// One place sets up logging for every command: warnings and errors on
	// stderr by default, -v for progress, --quiet for errors only.
	g := scanGlobal(args)
	logger := newLogger(stderr, g.level)
	prev := slog.Default()
	slog.SetDefault(logger)
	defer slog.SetDefault(prev)
	ctx = context.WithValue(ctx, loggerKey{}, logger)
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		return exitStatus(c, c.run(ctx, args[1:], stdout, stderr), g.json, stdout, stderr)
	}
	fmt.Fprintf(stderr, "agentos: unknown command %q: run 'agentos help' for the list\n", args[0])
	if g.json {
		printJSONError(stdout, "usage", fmt.Sprintf("unknown command %q: run 'agentos help' for the list", args[0]), "")
	}
	return exitUsage
}

// exitStatus reports how command c ended (err) and returns the exit
// status: help is printed, a usage error (2) shows the command's usage
// line, a failure (1) its message; under --json (asJSON) both also print
// the one JSON error object on stdout.
func exitStatus(c command, err error, asJSON bool, stdout, stderr io.Writer) int {
	var ue *usageError
	var he *helpError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &he):
		printCommandHelp(stdout, c, he.fs)
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		printCommandHelp(stdout, c, nil)
		return exitOK
	case errors.As(err, &ue):
		msg := strings.TrimPrefix(ue.msg, "agentos: ")
		fmt.Fprintf(stderr, "agentos %s: %s (usage: %s)\n", c.name, msg, c.usage)
		if asJSON {
			printJSONError(stdout, "usage", msg, c.usage)
		}
		return exitUsage
	case errors.Is(err, errFailed):
		return exitFailed // the command printed what failed (its JSON object under --json)
	default:
		fmt.Fprintf(stderr, "agentos %s: %s\n", c.name, errorText(err))
		if asJSON {
			printJSONError(stdout, "failed", errorText(err), "")
		}
		return exitFailed
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, quickhelp.Head(build())+": "+quickhelp.Tagline)
	printUsageBody(w)
}

// printUsageBody is the usage after its first line: the commands, their
// flags, the arguments' forms, the exit statuses. quickhelp's usage.txt
// MUST be this text (TestQuickHelpIsTheUsage).
func printUsageBody(w io.Writer) {
	fmt.Fprintln(w, "\nusage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-66s %s\n", c.usage, c.summary)
	}
	fmt.Fprintln(w, "\nflags of each command ('agentos COMMAND --help' says more):")
	printCommandsFlags(w)
	fmt.Fprintln(w, "\n"+argsUsage)
	fmt.Fprintln(w, "Durations (--timeout, --older-than) are Go durations (30s, 5m, 1h30m), days (7d) or a bare number of seconds; they must be positive.")
	fmt.Fprintln(w, "With --json a command prints exactly one JSON object on stdout, also when it fails: {\"error\": {\"kind\": \"usage\"|\"failed\", \"message\": ...}}.")
	fmt.Fprintln(w, "\nexit status: 0 ok, 1 tool invalid or run failed, 2 usage error")
}

// printCommandsFlags lists the flags of every command and subcommand
// (without the logging flags), then the logging flags once.
func printCommandsFlags(w io.Writer) {
	var logFS *flag.FlagSet
	for _, c := range commands {
		fs := commandFlags(c)
		if fs == nil {
			continue
		}
		logFS = fs
		fmt.Fprintf(w, "  %s:\n", c.name)
		printFlagsExcept(w, fs, "    ", logFlagNames)
		for _, sub := range subcommands[c.name] {
			if pfs := commandFlags(c, sub); pfs != nil {
				fmt.Fprintf(w, "  %s %s:\n", c.name, sub)
				printFlagsExcept(w, pfs, "    ", logFlagNames)
			}
		}
	}
	if logFS == nil {
		return
	}
	fmt.Fprintln(w, "  logging flags of every command (also before the command's name):")
	fs := flag.NewFlagSet("logging", flag.ContinueOnError)
	logFS.VisitAll(func(f *flag.Flag) {
		if slices.Contains(logFlagNames, f.Name) {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	printFlags(w, fs, "    ")
}

// flagError is the usage error of err, from parsing args with fs: an
// unknown flag is named as the user typed it (the flag package says
// "flag provided but not defined: -x" whether it was --x or -x=1).
func flagError(fs *flag.FlagSet, args []string, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return usagef("%v", err)
	}
	typed := "--" + name
	for _, a := range args {
		if a == "-"+name || a == "--"+name || strings.HasPrefix(a, "-"+name+"=") || strings.HasPrefix(a, "--"+name+"=") {
			typed = strings.SplitN(a, "=", 2)[0]
			break
		}
	}
	return usagef("unknown flag %s ('agentos %s --help' lists its flags)", typed, fs.Name())
}

// parseFlags parses flags that may stand before, between or after the
// positional arguments, and returns the positional ones. Everything after a
// literal "--" is positional.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	addLogFlags(fs, &logFlags{}) // read by run (scanGlobal); defined here so every command accepts and documents them
	var rest []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpError{fs}
			}
			return nil, flagError(fs, args, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			defaultRoot(fs)
			return append(pos, rest...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
