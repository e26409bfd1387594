// Package quickhelp answers `agentos help` before the packages that only
// other commands need are initialised.
//
// Go initialises packages in a specified order (since Go 1.21: the first
// package, sorted by import path, whose imports are all initialised). This
// package imports only os and syscall (see Fields), and its path sorts
// before the heavy ones the agentos binary links (etcd's and Google's
// protobufs, the OpenAI SDK, prometheus, gRPC), so its init runs right
// after os, 28 inits in; when the command line is exactly `agentos help`
// (or -h, --help) it prints the usage and exits there. Every other command
// line passes through untouched.
//
// The usage it prints is usage.txt, which MUST be byte for byte what the
// command's own printUsage writes after its first line (the flag sets the
// commands really parse): cmd/agentos's TestQuickHelpIsTheUsage fails when
// they differ and rewrites it with -update. The first line (version, Go,
// platform, commit) is computed here from the build information, as the
// command computes it.
package quickhelp

import (
	_ "embed"
	"os"
	"runtime"
)

// Usage is the usage after the first line; see the package comment.
//
//go:embed usage.txt
var Usage string

// Version is the release, set at link time with -ldflags
// "-X github.com/agentos-run/agentos/cmd/agentos/internal/quickhelp.Version=v1.2.3";
// empty means the module's version from the build information ("(devel)"
// for a local build).
var Version string

// workerEnv marks a sandbox worker (workerside.EnvWorker): never the help.
const workerEnv = "AGENTOS_SANDBOX_WORKER"

func init() {
	if !Asked(os.Args[1:]) || os.Getenv(workerEnv) != "" {
		return
	}
	mi, ok := exeModinfo()
	if !ok {
		return // the command answers, from runtime/debug's build information
	}
	os.Stdout.WriteString(Head(Fields(mi, true)) + ": " + Tagline + "\n" + Usage)
	os.Exit(0)
}

// Tagline follows the head on the usage's first line.
const Tagline = "a runtime where agents forge, check and run their own TypeScript tools"

// Asked reports whether args (the command line after the program name)
// ask for the global help alone: help, -h or --help, nothing else.
func Asked(args []string) bool {
	return len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help")
}

// Head is "agentos VERSION (GO OS/ARCH[, commit C[+modified]])", the first
// words of the usage and of `agentos version`.
func Head(version, commit string, modified bool) string {
	head := "agentos " + version + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	if commit != "" {
		head += ", commit " + commit[:min(12, len(commit))]
		if modified {
			head += "+modified"
		}
	}
	return head + ")"
}

// Fields returns the version (Version, else the main module's, else
// "unknown" when there is no build information: ok false), the VCS
// revision and whether the tree was modified, from modinfo: the build
// information in runtime/debug.BuildInfo.String's form, which is how the
// go command stores it in the binary. (A setting whose key or value holds
// a space, quote, tab or newline is quoted there; the vcs ones never are.)
//
// IMPORTANT: this package imports nothing but os and runtime (and embed,
// io): not runtime/debug, not even strings or strconv. Go initialises the
// packages in the order of their import paths, each once its imports are:
// its init waits until every import is initialised, and meanwhile every
// package that sorts before this one and is ready goes first. strings and
// strconv sort late, so with them (and runtime/debug, debug/elf or
// encoding/binary, which import reflect and fmt) all of encoding/gob,
// encoding/xml, debug/dwarf, crypto/... and the protobuf runtime's first
// packages were initialised before the help could answer (90 inits; 235
// with runtime/debug, which took 2.4 times the page faults and the time).
func Fields(modinfo string, ok bool) (version, commit string, modified bool) {
	version = Version
	if !ok {
		if version == "" {
			version = "unknown"
		}
		return version, "", false
	}
	for len(modinfo) > 0 {
		var line string
		line, modinfo, _ = cut(modinfo, '\n')
		kind, rest, _ := cut(line, '\t')
		switch kind {
		case "mod":
			if _, f, ok := cut(rest, '\t'); ok && version == "" {
				version, _, _ = cut(f, '\t')
			}
		case "build":
			switch key, value, _ := cut(rest, '='); key {
			case "vcs.revision":
				commit = value
			case "vcs.modified":
				modified = value == "true"
			}
		}
	}
	return version, commit, modified
}

// cut is strings.Cut of s around the first sep.
func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
