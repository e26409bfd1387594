package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
)

// flagName is how help shows a flag: -v, --root.
func flagName(f *flag.Flag) string {
	if len(f.Name) == 1 {
		return "-" + f.Name
	}
	return "--" + f.Name
}

// Issue 11, CLI defects: --help listed no flag descriptions, and `exec
// --help` lacked --inprocess, --journal and --no-journal. Every registered
// flag of every command (the flag set the command really parses) now appears
// in its --help, and in the global help, with a non-empty description; the
// global help names the build.
func TestHelpListsEveryFlag(t *testing.T) {
	code, global, _ := cli(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	if v := buildVersion(); !strings.Contains(global, "agentos "+v.Version+" ("+v.Go) {
		t.Errorf("the global help does not name the build (%s %s):\n%s", v.Version, v.Go, global)
	}
	type target struct {
		c     command
		extra []string
	}
	var targets []target
	for _, c := range commands {
		targets = append(targets, target{c: c})
		for _, sub := range subcommands[c.name] {
			targets = append(targets, target{c, []string{sub}})
		}
	}
	for _, tg := range targets {
		name := strings.Join(append([]string{tg.c.name}, tg.extra...), " ")
		fs := commandFlags(tg.c, tg.extra...)
		if fs == nil {
			t.Errorf("%s --help did not return its flag set", name)
			continue
		}
		args := append(append([]string{tg.c.name}, tg.extra...), "--help")
		code, help, stderr := cli(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, stderr)
		}
		n := 0
		fs.VisitAll(func(f *flag.Flag) {
			n++
			if strings.TrimSpace(f.Usage) == "" {
				t.Errorf("%s: flag %s has no description", name, flagName(f))
			}
			_, usage := flag.UnquoteUsage(f)
			for where, text := range map[string]string{name + " --help": help, "agentos --help": global} {
				found := false
				for _, line := range strings.Split(text, "\n") {
					found = found || strings.HasPrefix(strings.TrimSpace(line), flagName(f)+" ") && strings.Contains(line, usage)
				}
				if !found {
					t.Errorf("%s does not list %s with its description %q", where, flagName(f), usage)
				}
			}
		})
		if n == 0 {
			t.Errorf("%s has no flags at all", name)
		}
	}
	_, help, _ := cli(t, "exec", "--help")
	for _, want := range []string{"--inprocess", "--journal", "--no-journal", "--timeout", "-v", "--quiet", "@FILE"} {
		if !strings.Contains(help, want) {
			t.Errorf("exec --help lacks %s:\n%s", want, help)
		}
	}
}

// agentosChild runs this test binary as the agentos command with stdin.
func agentosChild(t *testing.T, stdin []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1")
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// Issue 11, CLI defects: arguments could only be given on the command line,
// where 5 MB hits "Argument list too long". ARGS_JSON is now also read from
// stdin ("-") or a file ("@FILE"), for exec and call, bounded by
// limits.max_args_bytes with a clear usage error beyond.
func TestArgsFromStdinAndFile(t *testing.T) {
	const lenTool = "/** The length of s. */\nexport default (args: { s: string }): number => args.s.length;\n"
	root := quotaRoot(t, `{"limits": {"max_args_bytes": 8388608}}`)
	os.MkdirAll(filepath.Join(root, "tools"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "tools/len.ts"), []byte(lenTool), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 5_000_000
	big := []byte(`{"s": "` + strings.Repeat("a", n) + `"}`)
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, big, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		stdin []byte
		arg   string
	}{{"stdin", big, "-"}, {"file", nil, "@" + file}} {
		code, stdout, stderr := agentosChild(t, tc.stdin, "exec", "--root", root, "--no-journal", "tools/len.ts", tc.arg)
		if code != 0 || strings.TrimSpace(stdout) != "5000000" {
			t.Errorf("exec with 5 MB of args from %s: exit %d, stdout %.100q, stderr %.300q", tc.name, code, stdout, stderr)
		}
	}
	// call takes its ARGS_JSON the same ways.
	callArgs := []byte(`{"path": "tools/len.ts", "args": ` + string(big) + `}`)
	code, stdout, stderr := agentosChild(t, callArgs, "call", "--root", root, "--json", "exec_tool", "-")
	if code != 0 || !strings.Contains(stdout, `"result": 5000000`) {
		t.Errorf("call with 5 MB of args from stdin: exit %d, stdout %.300q, stderr %.300q", code, stdout, stderr)
	}
	callFile := filepath.Join(t.TempDir(), "call.json")
	os.WriteFile(callFile, []byte(`{"path": "tools/len.ts"}`), 0o644)
	if code, stdout, stderr := cli(t, "call", "--root", root, "read_file", "@"+callFile); code != 0 || stdout != lenTool {
		t.Errorf("call read_file @FILE: exit %d %q %q", code, stdout, stderr)
	}
	// Beyond limits.max_args_bytes (4 MiB by default): a usage error that
	// names the setting, whatever the source.
	small := toolRoot(t, map[string]string{"tools/len.ts": lenTool})
	for _, tc := range []struct {
		stdin []byte
		args  []string
	}{
		{big, []string{"exec", "--root", small, "tools/len.ts", "-"}},
		{nil, []string{"exec", "--root", small, "tools/len.ts", "@" + file}},
		{callArgs, []string{"call", "--root", small, "exec_tool", "-"}},
	} {
		code, stdout, stderr := agentosChild(t, tc.stdin, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "over limits.max_args_bytes (4194304 bytes)") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v over the limit: exit %d, stdout %.100q, stderr %.300q", tc.args[:2], code, stdout, stderr)
		}
	}
	for _, tc := range []struct{ arg, want string }{
		{"@" + filepath.Join(t.TempDir(), "none.json"), "cannot read ARGS_JSON from"},
		{"@" + t.TempDir(), "is a directory"},
	} {
		if code, _, stderr := cli(t, "exec", "--root", small, "tools/len.ts", tc.arg); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("exec %s: exit %d %q, want 2 and %q", tc.arg, code, stderr, tc.want)
		}
	}
}

// oneJSONObject reports whether s is exactly one JSON object.
func oneJSONObject(s string) bool {
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var v map[string]any
	if dec.Decode(&v) != nil {
		return false
	}
	var extra any
	return dec.Decode(&extra) != nil // nothing after it
}

// Issue 11, CLI defects: with --json, usage errors printed nothing, and
// runs, ps, events, recover and quota printed bare arrays. Every command now
// prints exactly one JSON object with --json, when it succeeds and when it
// fails; failures have one shape, {"error": {"kind", "message"}}.
func TestJSONAlwaysOneObject(t *testing.T) {
	root := toolRoot(t, map[string]string{samples.FibPath: samples.FibTool, "tools/boom.ts": "export default () => { throw new Error('boom'); };\n"})
	code, stdout, stderr := cli(t, "exec", "--root", root, "--json", samples.FibPath, `{"n": 10}`)
	var res struct{ Run string }
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || res.Run == "" {
		t.Fatalf("exec: %d %s %s", code, stdout, stderr)
	}
	quotaRootDir := quotaRoot(t, `{"quota": {"tool_calls": 100}}`)
	if code, _, stderr := cli(t, "call", "--root", quotaRootDir, "list_files", `{"dir": "tools"}`); code != 0 {
		t.Fatalf("call: %d %s", code, stderr)
	}
	// forge reuses the registered tool (with a scripted model that must not
	// be asked).
	srv := llmtest.NewServer([]llmtest.Step{{ToolCalls: []llm.ToolCall{{ID: "1", Name: "submit_tool", Arguments: "{}"}}}})
	defer srv.Close()
	t.Setenv("AGENTOS_LLM_BASE_URL", srv.URL())
	t.Setenv("AGENTOS_LLM_MODEL", "scripted")
	forgeRoot := toolRoot(t, nil)
	content, _ := json.Marshal(samples.FibTool)
	if code, _, stderr := cli(t, "call", "--root", forgeRoot, "write_file", `{"path":"tools/math/fib.ts","content":`+string(content)+`}`); code != 0 {
		t.Fatalf("write_file: %s", stderr)
	}
	noRoot := t.TempDir()
	type tc struct {
		args []string
		code int // -1: 0 or 1 (version depends on the machine)
	}
	cases := []tc{
		{[]string{"check", "--root", root, samples.FibPath}, 0},
		{[]string{"check", "--root", root, "tools/none.ts"}, 2},
		{[]string{"exec", "--root", root, samples.FibPath, `{"n": 5}`}, 0},
		{[]string{"exec", "--root", root, "tools/boom.ts"}, 1},
		{[]string{"exec", "--root", root, samples.FibPath, `{"n":`}, 2},
		{[]string{"exec", "--root", root, "--timeout", "0", samples.FibPath}, 2},
		{[]string{"exec", "--root", noRoot, "x.ts"}, 2},
		{[]string{"exec", "--bogus"}, 2},
		{[]string{"runs", "--root", root}, 0},
		{[]string{"runs", "--root", noRoot}, 2},
		{[]string{"runs", "prune", "--root", root, "--keep", "5"}, 0},
		{[]string{"runs", "prune", "--root", root, "--older-than", "-1s"}, 2},
		{[]string{"trace", "--root", root, res.Run}, 0},
		{[]string{"trace", "--root", root, "nosuchrun"}, 2},
		{[]string{"replay", "--root", root, res.Run}, 0},
		{[]string{"replay", "--root", root}, 2},
		{[]string{"recover", "--root", root}, 0},
		{[]string{"recover", "--root", root, "extra"}, 2},
		{[]string{"call", "--root", root, "list_files", `{"dir": "tools"}`}, 0},
		{[]string{"call", "--root", root, "read_file", `{"path": "tools/none.ts"}`}, 1},
		{[]string{"call", "--root", root, "rm_rf", `{}`}, 2},
		{[]string{"forge", "--root", forgeRoot, "the n-th fibonacci number"}, 0},
		{[]string{"forge", "--root", root}, 2},
		{[]string{"ps", "--root", root}, 1},
		{[]string{"events", "--root", root}, 1},
		{[]string{"quota", "--root", quotaRootDir}, 0},
		{[]string{"quota", "--root", quotaRootDir, "reset"}, 0},
		{[]string{"quota", "--root", root, "reset", "nobody"}, 1},
		{[]string{"quota", "--root", root, "frob"}, 2},
		{[]string{"version", "--root", root}, -1},
		{[]string{"version", "extra"}, 2},
		{[]string{"init", t.TempDir()}, 2}, // init has no --json: a usage error, as one object
		{[]string{"serve", "--root", root}, 2},
		{[]string{"demo"}, 2},
		{[]string{"frobnicate"}, 2},
	}
	check := func(c tc, args []string) {
		t.Helper()
		code, stdout, stderr := cli(t, args...)
		if c.code >= 0 && code != c.code || c.code < 0 && code > 1 {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, c.code, stderr)
		}
		if !oneJSONObject(stdout) {
			t.Errorf("%v: stdout is not exactly one JSON object: %q", args, stdout)
			return
		}
		var e struct {
			Error *struct{ Kind, Message string }
		}
		json.Unmarshal([]byte(stdout), &e)
		switch {
		case code == 2 && (e.Error == nil || e.Error.Kind != "usage" || e.Error.Message == ""):
			t.Errorf("%v: a usage error must print {\"error\": {\"kind\": \"usage\", \"message\": ...}}: %s", args, stdout)
		case code == 0 && e.Error != nil:
			t.Errorf("%v: success printed an error: %s", args, stdout)
		}
	}
	for _, c := range cases {
		check(c, append(append([]string{}, c.args...), "--json"))
	}
	// --json may also stand before the command.
	check(tc{code: 2}, []string{"--json", "exec", "--root", noRoot, "x.ts"})
	// The lists are objects: {"runs": [...]}, never a bare array.
	for _, c := range []struct {
		args []string
		key  string
	}{
		{[]string{"runs", "--root", root, "--json"}, "runs"},
		{[]string{"recover", "--root", root, "--json"}, "recovered"},
		{[]string{"quota", "--root", quotaRootDir, "--json"}, "accounts"},
	} {
		_, stdout, _ := cli(t, c.args...)
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(stdout), &m) != nil || !strings.HasPrefix(string(m[c.key]), "[") {
			t.Errorf("%v: want {%q: [...]}, got %s", c.args, c.key, stdout)
		}
	}

	// ps and events, with a node serving the root.
	rt, err := host.Start(context.Background(), host.Config{Root: root, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx) }()
	waitListening(t, root, 20*time.Second)
	for _, c := range []struct{ cmd, key string }{{"ps", "processes"}, {"events", "events"}} {
		check(tc{code: 0}, []string{c.cmd, "--root", root, "--json"})
		check(tc{code: 2}, []string{c.cmd, "--root", root, "--json", "extra"})
		_, stdout, _ := cli(t, c.cmd, "--root", root, "--json")
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(stdout), &m) != nil || !strings.HasPrefix(string(m[c.key]), "[") {
			t.Errorf("%s --json: want {%q: [...]}, got %s", c.cmd, c.key, stdout)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// Issue 11, CLI defects: --timeout 0, 0s and -1s silently meant 5 s, and
// --timeout 5 said "parse error". Every duration flag goes through
// parseDuration: non-positive values are a usage error, a bare number is
// seconds.
func TestDurationFlags(t *testing.T) {
	root := toolRoot(t, map[string]string{samples.FibPath: samples.FibTool})
	for _, v := range []string{"0", "0s", "-1s", "-3", "soon", ""} {
		code, stdout, stderr := cli(t, "exec", "--root", root, "--timeout", v, samples.FibPath)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "give a positive duration") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("--timeout %q: exit %d %q %q, want a usage error", v, code, stdout, stderr)
		}
		if code, _, stderr := cli(t, "runs", "prune", "--root", root, "--older-than", v); code != 2 || !strings.Contains(stderr, "give a positive duration") {
			t.Errorf("--older-than %q: exit %d %q, want a usage error", v, code, stderr)
		}
	}
	if code, stdout, stderr := cli(t, "exec", "--root", root, "--timeout", "5", samples.FibPath, `{"n": 10}`); code != 0 || strings.TrimSpace(stdout) != "55" {
		t.Errorf("--timeout 5: exit %d %q %q", code, stdout, stderr)
	}
	for in, want := range map[string]time.Duration{"5": 5 * time.Second, "0.5": 500 * time.Millisecond, "90s": 90 * time.Second, "2m": 2 * time.Minute, "7d": 7 * 24 * time.Hour, "1h30m": 90 * time.Minute} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

// Issue 11, CLI defects: serve and forge printed INFO log lines on stderr by
// default. The default is now warnings and errors only; -v shows INFO.
func TestLogLevels(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"path": "tools/math/fib.ts", "code": samples.FibForged, "tests": samples.FibForgedTests})
	steps := []llmtest.Step{{ToolCalls: []llm.ToolCall{{ID: "1", Name: "submit_tool", Arguments: string(args)}}}}
	for _, tc := range []struct {
		flags    []string
		wantInfo bool
	}{{nil, false}, {[]string{"--quiet"}, false}, {[]string{"-v"}, true}, {[]string{"--log-level", "info"}, true}} {
		srv := llmtest.NewServer(steps)
		t.Setenv("AGENTOS_LLM_BASE_URL", srv.URL())
		t.Setenv("AGENTOS_LLM_MODEL", "scripted")
		root := toolRoot(t, nil)
		code, stdout, stderr := cli(t, append(append([]string{"forge", "--root", root}, tc.flags...), "a tool that returns the n-th Fibonacci number")...)
		srv.Close()
		if code != 0 || !strings.Contains(stdout, "forged tools/math/fib.ts") {
			t.Fatalf("forge %v: %d %s %s", tc.flags, code, stdout, stderr)
		}
		if got := strings.Contains(stderr, "level=INFO"); got != tc.wantInfo {
			t.Errorf("forge %v: INFO lines on stderr: %v, want %v:\n%s", tc.flags, got, tc.wantInfo, stderr)
		}
	}
	// serve, as a real process: quiet by default, INFO with -v (also
	// before the command's name).
	for _, tc := range []struct {
		pre, flags []string
		wantInfo   bool
	}{{nil, nil, false}, {[]string{"-v"}, nil, true}, {nil, []string{"--verbose"}, true}} {
		root := toolRoot(t, nil)
		cmd := exec.Command(os.Args[0], append(append(append([]string{}, tc.pre...), "serve", "--root", root), tc.flags...)...)
		cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1")
		var stdout, stderr lockedBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(stdout.String(), "agentos node serving") {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("serve did not come up: %s %s", stdout.String(), stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("serve: %v %s", err, stderr.String())
		}
		if got := strings.Contains(stderr.String(), "level=INFO"); got != tc.wantInfo {
			t.Errorf("serve %v %v: INFO lines on stderr: %v, want %v:\n%s", tc.pre, tc.flags, got, tc.wantInfo, stderr.String())
		}
	}
	for _, tc := range []struct {
		args []string
		want slog.Level
	}{
		{nil, slog.LevelWarn}, {[]string{"-v"}, slog.LevelInfo}, {[]string{"-v", "--verbose"}, slog.LevelDebug},
		{[]string{"--quiet"}, slog.LevelError}, {[]string{"--log-level=debug", "--quiet"}, slog.LevelDebug},
		{[]string{"--", "-v"}, slog.LevelWarn},
	} {
		if got := scanGlobal(tc.args).level; got != tc.want {
			t.Errorf("scanGlobal(%q).level = %v, want %v", tc.args, got, tc.want)
		}
	}
	if code, _, stderr := cli(t, "serve", "--log-level", "loud"); code != 2 || !strings.Contains(stderr, `unknown log level "loud"`) {
		t.Errorf("--log-level loud: %d %q", code, stderr)
	}
}

// Issue 11, CLI defects: errors named their layer twice ("agentos ps:
// agentos: no running node", "patch_file: git: search text not found",
// "exec_sql: exec_sql: ..."). No error line of the CLI repeats a prefix.
func TestErrorsNameEachLayerOnce(t *testing.T) {
	root := toolRoot(t, map[string]string{
		samples.FibPath:   samples.FibTool,
		"tools/sql.ts":    "/** Bad SQL. */\nexport default async () => tgp.exec_sql('SELEC 1', []);\n",
		"tools/sqlarg.ts": "/** Bad params. */\nexport default async () => tgp.exec_sql('SELECT 1', 7 as unknown as unknown[]);\n",
	})
	doubled := []*regexp.Regexp{regexp.MustCompile(`agentos .*: agentos:`), regexp.MustCompile(`: git: `)}
	word := regexp.MustCompile(`(\w+): `)
	var lines []string
	for _, args := range [][]string{
		{"ps", "--root", root},
		{"events", "--root", root},
		{"quota", "--root", root, "reset", "nobody"},
		{"call", "--root", root, "patch_file", `{"path": "tools/math/fib.ts", "search": "no such text", "replace": "x"}`},
		{"call", "--root", root, "exec_sql", `{"sql": "SELEC 1"}`},
		{"call", "--root", root, "read_file", `{"path": "tools/none.ts"}`},
		{"exec", "--root", root, "tools/sql.ts"},
		{"exec", "--root", root, "tools/sqlarg.ts"},
		{"call", "--root", root, "exec_tool", `{"path": "tools/sql.ts"}`},
		{"replay", "--root", root, "nosuchrun"},
		{"trace", "--root", root, "nosuchrun"},
	} {
		code, stdout, stderr := cli(t, args...)
		if code == 0 {
			t.Errorf("%v succeeded: %s", args, stdout)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(stderr+"\n"+stdout), "\n")...)
	}
	for _, l := range lines {
		// (\w+): \1: without back-references: one word-and-colon right
		// after the same one.
		ms := word.FindAllStringSubmatchIndex(l, -1)
		for i := 1; i < len(ms); i++ {
			if ms[i][0] == ms[i-1][1] && l[ms[i][2]:ms[i][3]] == l[ms[i-1][2]:ms[i-1][3]] {
				t.Errorf("a prefix is repeated (%s): %s", l[ms[i][2]:ms[i][3]], l)
			}
		}
		for _, re := range doubled {
			if re.MatchString(l) {
				t.Errorf("a prefix is repeated (%s): %s", re, l)
			}
		}
	}
}

// Issue 11, CLI defects: exec in any directory silently created .agentos/
// there, and exec of a directory exited 1. Outside a tool root exec refuses
// (exit 2, saying what to do) and creates nothing, unless --no-journal asks
// for an unrecorded run; a directory is a usage error; from a subdirectory of
// a tool root the root is found walking up.
func TestExecOutsideToolRoot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.ts"), []byte("export default () => 'hi';\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	// serve runs under a cancelled context: were it to start, it would stop
	// at once instead of serving until the test times out.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{{"exec", "hello.ts"}, {"exec", "--root", dir, "hello.ts"}, {"call", "list_files", "{}"}, {"serve"}, {"recover"}, {"runs"}, {"quota"}} {
		var out, errb bytes.Buffer
		code := run(cancelled, args, &out, &errb)
		stdout, stderr := out.String(), errb.String()
		if code != 2 || stdout != "" || !strings.Contains(stderr, "is not a tool root") || !strings.Contains(stderr, "agentos init") {
			t.Errorf("%v outside a tool root: exit %d %q %q", args, code, stdout, stderr)
		}
	}
	if code, stdout, stderr := cli(t, "exec", "--no-journal", "hello.ts"); code != 0 || strings.TrimSpace(stdout) != `"hi"` {
		t.Errorf("exec --no-journal outside a tool root: %d %q %q", code, stdout, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("commands outside a tool root left files: %v", entries)
	}

	root := toolRoot(t, map[string]string{samples.FibPath: samples.FibTool})
	for _, p := range []string{"tools", "tools/math", filepath.Join(root, "tools")} {
		code, stdout, stderr := cli(t, "exec", "--root", root, p)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "is a directory") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("exec %s: exit %d %q %q, want 2 and 'is a directory'", p, code, stdout, stderr)
		}
	}
	t.Chdir(filepath.Join(root, "tools", "math"))
	if code, stdout, stderr := cli(t, "exec", "fib.ts", `{"n": 10}`); code != 0 || strings.TrimSpace(stdout) != "55" {
		t.Errorf("exec from a subdirectory of the tool root: %d %q %q", code, stdout, stderr)
	}
	if code, stdout, _ := cli(t, "runs"); code != 0 || !strings.Contains(stdout, samples.FibPath) {
		t.Errorf("runs from a subdirectory of the tool root: %d %q", code, stdout)
	}
}
