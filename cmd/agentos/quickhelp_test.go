package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/cmd/agentos/internal/quickhelp"
)

var updateUsage = flag.Bool("update", false, "rewrite internal/quickhelp/usage.txt from printUsageBody")

// TestQuickHelpIsTheUsage: the usage `agentos help` prints from quickhelp
// (before most packages are initialised) is the one the commands' flag sets
// make. After changing a command or a flag, run
// go test ./cmd/agentos -run TestQuickHelpIsTheUsage -update.
func TestQuickHelpIsTheUsage(t *testing.T) {
	var b bytes.Buffer
	printUsageBody(&b)
	if *updateUsage {
		if err := os.WriteFile("internal/quickhelp/usage.txt", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if b.String() != quickhelp.Usage {
		t.Fatalf("internal/quickhelp/usage.txt is not the usage the commands print: run\n"+
			"  go test ./cmd/agentos -run TestQuickHelpIsTheUsage -update\nto rewrite it; the usage is:\n%s", b.String())
	}
}

// TestHelpBeforeTheHeavyPackages runs this test binary as `agentos help`
// (quickhelp answers in its init, so the test binary answers as the command
// does) and checks that the output is printUsage's and that none of the
// packages only other commands need was initialised on the way.
func TestHelpBeforeTheHeavyPackages(t *testing.T) {
	var want bytes.Buffer
	printUsage(&want)
	for _, arg := range []string{"help", "-h", "--help"} {
		cmd := exec.Command(os.Args[0], arg)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "AGENTOS_CLI_CHILD=1") // without quickhelp, TestMain runs the command
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("agentos %s: %v\n%s", arg, err, stderr.String())
		}
		if stdout.String() != want.String() {
			t.Errorf("agentos %s printed\n%s\nwant printUsage's\n%s", arg, stdout.String(), want.String())
		}
		// The heaviest inits of `agentos help` before quickhelp (perf, 30 runs): etcd's
		// server protobufs, the OpenAI SDK, prometheus, gRPC, and what only tools need.
		for _, heavy := range []string{"go.etcd.io/etcd/api/v3/etcdserverpb", "github.com/openai/openai-go/v3",
			"github.com/prometheus/client_golang/prometheus", "google.golang.org/grpc", "github.com/jackc/pgx/v5",
			"github.com/dop251/goja", "github.com/evanw/esbuild/internal/compat", "modernc.org/libc",
			// and what waited for quickhelp's imports when they were more than os:
			// reflect, then every ready package that sorts before quickhelp.
			"reflect", "encoding/gob", "encoding/xml", "debug/dwarf", "google.golang.org/protobuf/encoding/protowire"} {
			if strings.Contains(stderr.String(), "init "+heavy+" @") {
				t.Errorf("agentos %s initialised %s before answering:\n%s", arg, heavy, stderr.String())
			}
		}
		if !strings.Contains(stderr.String(), "init ") {
			t.Errorf("no inittrace line at all (GODEBUG=inittrace=1 unsupported?): the check above saw nothing:\n%s", stderr.String())
		}
	}
}

// TestQuickHelpAsksOnlyForTheGlobalHelp: any other command line (a
// command, a flag before help, a command's own --help) goes to the
// command as before.
func TestQuickHelpAsksOnlyForTheGlobalHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		if !quickhelp.Asked(args) {
			t.Errorf("Asked(%q) = false", args)
		}
	}
	for _, args := range [][]string{{}, {"-v", "help"}, {"help", "exec"}, {"exec", "--help"}, {"--json", "--help"}, {"version"}, {"HELP"}} {
		if quickhelp.Asked(args) {
			t.Errorf("Asked(%q) = true", args)
		}
	}
}

// TestWorkerBeforeTheHeavyPackages: agentos started again as a sandbox
// worker (what the pool does when no agentos-worker sits beside it) greets
// its parent from quickworker's init, before the packages only the other
// commands need are initialised.
func TestWorkerBeforeTheHeavyPackages(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "AGENTOS_SANDBOX_WORKER=1", "AGENTOS_WORKER_MEMORY=268435456")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr // stdin: none, so the worker ends after its hello
	if err := cmd.Run(); err != nil {
		t.Fatalf("worker: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), `{"t":"hello"`) {
		t.Fatalf("no hello frame from the worker: %q\n%s", stdout.String(), stderr.String())
	}
	for _, heavy := range []string{"google.golang.org/grpc", "github.com/openai/openai-go/v3",
		"github.com/prometheus/client_golang/prometheus", "net/http", "modernc.org/sqlite", "go.etcd.io/etcd/client/v3",
		"github.com/agentos-run/agentos/journal", "github.com/agentos-run/agentos/actors/executor"} {
		if strings.Contains(stderr.String(), "init "+heavy+" @") {
			t.Errorf("the worker initialised %s before serving", heavy)
		}
	}
	if !strings.Contains(stderr.String(), "init github.com/dop251/goja @") {
		t.Errorf("no inittrace line for goja (GODEBUG=inittrace=1 unsupported?): the check above saw nothing:\n%s", stderr.String())
	}
}
