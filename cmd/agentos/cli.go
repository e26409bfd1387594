package main

// The helpers every command shares: help generated from the real flag sets,
// the logging flags and the one logger, the --json error object, duration
// flags, ARGS_JSON from the command line, stdin or a file, and finding the
// tool root.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentos-run/agentos/internal/host"
)

// rootUsage is the description of every command's --root flag.
const rootUsage = "the tool root `DIR` (default: the nearest directory holding agentos.json, from the current one up)"

// helpError is what parseFlags returns for -h/--help: the command's real
// flag set, from which its help is printed (so the help cannot drift from
// the flags). It matches flag.ErrHelp with errors.Is.
type helpError struct{ fs *flag.FlagSet }

func (e *helpError) Error() string { return flag.ErrHelp.Error() }
func (e *helpError) Unwrap() error { return flag.ErrHelp }

// printCommandHelp prints a command's usage, summary and every flag of fs
// with its description.
func printCommandHelp(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", c.usage, c.summary)
	if h := commandHelp[c.name]; h != "" {
		fmt.Fprintf(w, "\n%s\n", h)
	}
	if fs != nil {
		fmt.Fprintln(w, "\nflags:")
		printFlags(w, fs, "  ")
	}
}

// printFlags lists every flag of fs, each with its description.
func printFlags(w io.Writer, fs *flag.FlagSet, indent string) {
	printFlagsExcept(w, fs, indent, nil)
}

// printFlagsExcept is printFlags without the flags skip names.
func printFlagsExcept(w io.Writer, fs *flag.FlagSet, indent string, skip []string) {
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(skip, f.Name) {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		head := dash + f.Name
		if name != "" {
			head += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "." {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s%-22s %s\n", indent, head, usage)
	})
}

// commandFlags returns the flag set a command parses, by asking it for its
// help (every command parses its flags before it does anything). extra are
// the arguments before --help (e.g. "prune" for runs prune).
func commandFlags(c command, extra ...string) *flag.FlagSet {
	err := c.run(context.Background(), append(extra, "--help"), io.Discard, io.Discard)
	var he *helpError
	if errors.As(err, &he) {
		return he.fs
	}
	return nil
}

// ---- logging ----

// logFlags are the logging flags every command accepts (anywhere on the
// command line, also before the command's name). run reads them once and
// sets up the one logger of the invocation; the flag set only accepts and
// documents them.
type logFlags struct {
	verbose int
	quiet   bool
	level   string
}

// counter is a boolean flag that counts how often it is given (-v -v).
type counter struct{ n *int }

func (c counter) String() string {
	if c.n == nil {
		return "0"
	}
	return strconv.Itoa(*c.n)
}
func (c counter) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("-v takes no value: repeat it (-v -v) for more")
	}
	if b {
		*c.n++
	}
	return nil
}
func (c counter) IsBoolFlag() bool { return true }

// levelValue is --log-level: debug, info, warn or error.
type levelValue struct{ s *string }

func (v levelValue) String() string {
	if v.s == nil {
		return ""
	}
	return *v.s
}
func (v levelValue) Set(s string) error {
	if _, err := parseLevel(s); err != nil {
		return err
	}
	*v.s = s
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q: use debug, info, warn or error", s)
}

// logFlagNames are the names addLogFlags defines.
var logFlagNames = []string{"v", "verbose", "quiet", "log-level"}

// addLogFlags defines the logging flags on fs (once).
func addLogFlags(fs *flag.FlagSet, lf *logFlags) {
	if fs.Lookup("v") != nil {
		return
	}
	fs.Var(counter{&lf.verbose}, "v", "log progress (INFO) on stderr; -v -v logs debug detail too")
	fs.Var(counter{&lf.verbose}, "verbose", "the same as -v")
	fs.BoolVar(&lf.quiet, "quiet", false, "log errors only (the default logs warnings and errors)")
	fs.Var(levelValue{&lf.level}, "log-level", "log at `LEVEL`: debug, info, warn (the default) or error; overrides -v and --quiet")
}

// isLogFlag reports whether arg is one of the logging flags, and whether it
// takes the next argument as its value.
func isLogFlag(arg string) (is, takesValue bool) {
	name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	if !strings.HasPrefix(arg, "-") {
		return false, false
	}
	switch name {
	case "v", "verbose", "quiet":
		return true, false
	case "log-level":
		return true, !hasValue
	}
	return false, false
}

// globalFlags is what run reads from the whole command line before the
// command parses it: the logging flags and --json.
type globalFlags struct {
	json  bool
	level slog.Level
}

// scanGlobal reads the logging flags and --json anywhere before a "--".
// Invalid values are left to the command's flag parsing, which refuses them.
func scanGlobal(args []string) globalFlags {
	var g globalFlags
	lf := logFlags{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		switch name {
		case "json":
			g.json = boolSet(hasValue, value)
		case "v", "verbose":
			lf.verbose++
		case "quiet":
			lf.quiet = boolSet(hasValue, value)
		case "log-level":
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			lf.level = value
		}
	}
	g.level = lf.logLevel()
	return g
}

// boolSet reports whether a boolean flag scanned by scanGlobal is on: given
// bare (--json) or as --json=true or --json=1.
func boolSet(hasValue bool, value string) bool {
	return !hasValue || value == "true" || value == "1"
}

// logLevel is the level the logging flags ask for: --log-level, else -v
// (info) or -v -v (debug), else --quiet (errors), else warnings. An
// invalid --log-level is left to the command's flag parsing.
func (lf logFlags) logLevel() slog.Level {
	switch {
	case lf.level != "":
		if l, err := parseLevel(lf.level); err == nil {
			return l
		}
	case lf.verbose >= 2:
		return slog.LevelDebug
	case lf.verbose == 1:
		return slog.LevelInfo
	case lf.quiet:
		return slog.LevelError
	}
	return slog.LevelWarn
}

type loggerKey struct{}

// newLogger is the one logger of an invocation: text on stderr at level.
func newLogger(stderr io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

// cmdLogger returns the invocation's logger (set up by run from -v,
// --quiet and --log-level); every command that logs MUST use it.
func cmdLogger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// ---- errors ----

// jsonError is the one shape of a failure under --json, for every command:
// {"error": {"kind": "usage"|"failed", "message": "..."}}. A usage error
// (exit status 2) also carries the command's usage line.
type jsonError struct {
	Error jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Usage   string `json:"usage,omitempty"`
}

// errorText is an error's message as the CLI prints it after "agentos CMD: ".
// The CLI's prefix names the command; the library's own package prefix
// ("agentos: ") would name it a second time, so it is dropped here.
func errorText(err error) string {
	return strings.TrimPrefix(err.Error(), "agentos: ")
}

// ---- durations ----

// parseDuration reads a duration flag's value: a Go duration (90s, 5m,
// 1h30m), days (7d), or a bare number of seconds (5, 0.5). It MUST be
// positive: 0, 0s and -1s are refused.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	var err error
	if f, perr := strconv.ParseFloat(s, 64); perr == nil {
		d = time.Duration(f * float64(time.Second))
	} else if n, ok := strings.CutSuffix(s, "d"); ok {
		var days float64
		if days, err = strconv.ParseFloat(n, 64); err == nil {
			d = time.Duration(days * float64(24*time.Hour))
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, errors.New("give a positive duration such as 30s, 5m, 2h or 7d (a bare number is seconds)")
	}
	return d, nil
}

// durationValue is a flag.Value read by parseDuration; unset, it stays 0
// (the command's default).
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	return v.d.String()
}
func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// durationFlag defines a duration flag read by parseDuration. Every
// duration flag of the CLI MUST be defined with it.
func durationFlag(fs *flag.FlagSet, name, usage string) *time.Duration {
	d := new(time.Duration)
	fs.Var(durationValue{d}, name, usage)
	return d
}

// ---- ARGS_JSON ----

// argsUsage describes where ARGS_JSON may come from, for the help texts.
const argsUsage = "ARGS_JSON is a JSON object given inline, '-' to read it from stdin, or '@FILE' to read it from FILE; it is at most limits.max_args_bytes (agentos.json, default 4 MiB)."

// readArgs returns the ARGS_JSON argument's text: the argument itself, stdin
// for "-", or the file named after "@". It MUST NOT exceed limit bytes.
func readArgs(arg string, limit int) ([]byte, error) {
	var b []byte
	from := "ARGS_JSON"
	switch {
	case arg == "-":
		from = "ARGS_JSON from stdin"
		var err error
		if b, err = io.ReadAll(io.LimitReader(os.Stdin, int64(limit)+1)); err != nil {
			return nil, usagef("reading ARGS_JSON from stdin: %v", err)
		}
	case strings.HasPrefix(arg, "@"):
		name := arg[1:]
		from = "ARGS_JSON from " + name
		f, err := os.Open(name)
		if err != nil {
			return nil, usagef("cannot read ARGS_JSON from %s: %v", name, errors.Unwrap(err))
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return nil, usagef("cannot read ARGS_JSON from %s: it is a directory", name)
		}
		if b, err = io.ReadAll(io.LimitReader(f, int64(limit)+1)); err != nil {
			return nil, usagef("reading ARGS_JSON from %s: %v", name, err)
		}
	default:
		b = []byte(arg)
	}
	if len(b) > limit {
		return nil, usagef("%s is over limits.max_args_bytes (%d bytes): send less, or raise limits.max_args_bytes in agentos.json", from, limit)
	}
	return b, nil
}

// ---- the tool root ----

// findRoot returns the nearest directory from dir up that holds
// agentos.json, or "" when there is none.
func findRoot(dir string) string {
	for {
		if fi, err := os.Stat(filepath.Join(dir, host.ConfigFile)); err == nil && !fi.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// defaultRoot sets fs's --root, when the command has one and it was not
// given, to the nearest tool root from the current directory up.
func defaultRoot(fs *flag.FlagSet) {
	if fs.Lookup("root") == nil {
		return
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "root" })
	if set {
		return
	}
	if wd, err := os.Getwd(); err == nil {
		if r := findRoot(wd); r != "" {
			_ = fs.Set("root", r)
		}
	}
}

// notRootError says that dir holds no agentos.json.
func notRootError(dir string) error {
	return usagef("%s is not a tool root (no %s here or above): run 'agentos init', or pass --root DIR", dir, host.ConfigFile)
}

// isToolRoot reports whether dir holds agentos.json.
func isToolRoot(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, host.ConfigFile))
	return err == nil && !fi.IsDir()
}

// printJSONError prints err as the one JSON object of a failed --json
// invocation.
func printJSONError(w io.Writer, kind, msg, usage string) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(jsonError{Error: jsonErrorBody{Kind: kind, Message: msg, Usage: usage}})
}

// moveLeadingFlags turns "agentos -v --json serve ..." into "agentos serve
// -v --json ...": the logging flags and --json may stand before the
// command's name.
func moveLeadingFlags(args []string) []string {
	var lead []string
	i := 0
	for i < len(args) {
		a := args[i]
		is, takes := isLogFlag(a)
		if a == "--json" || a == "-json" {
			is = true
		}
		if !is {
			break
		}
		lead = append(lead, a)
		i++
		if takes && i < len(args) {
			lead = append(lead, args[i])
			i++
		}
	}
	if len(lead) == 0 || i >= len(args) {
		return args
	}
	return append(append([]string{args[i]}, lead...), args[i+1:]...)
}

// commandHelp is what a command's --help says beyond its usage line,
// summary and flags.
var commandHelp = map[string]string{
	"exec": argsUsage + "\nOutside a tool root exec refuses to run (it would create .agentos/ there) unless --no-journal is given; PATH MUST be a file.\n" +
		"With --json: {success, result, logs, error, run}.",
	"call":    argsUsage + "\nWith --json: the tool's result object (a result that is not an object, such as list_files' array or read_file's text, as {\"result\": ...}), or {\"error\": {\"kind\", \"message\"}}.",
	"runs":    "With --json: {\"runs\": [{id, kind, tool, status, started, ended, duration_ns, calls, ...}]}.",
	"ps":      "With --json: {\"processes\": [{pid, parent, name, image, status, mailbox, calls, started, usage, left}]}.",
	"events":  "With --json: {\"events\": [{seq, time, kind, pid, name, reason, detail, meter, amount}]}.",
	"recover": "With --json: {\"recovered\": [{run, resumed, quarantined, reason, result}]}.",
	"quota":   "With --json: {\"accounts\": [{account, spent, limits}]}; 'quota reset' prints {\"reset\": [ACCOUNT...]}.",
	"serve":   "serve logs warnings and errors on stderr; -v adds its progress (INFO), -v -v debug detail, --quiet leaves errors only.",
	"forge":   "forge logs warnings and errors on stderr; -v shows each step (INFO).",
}

// nonNilSlice returns s, or an empty slice for nil (so JSON says [], not null).
func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
