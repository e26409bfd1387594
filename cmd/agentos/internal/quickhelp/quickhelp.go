// Package quickhelp answers `agentos help` before the packages that only
// other commands need are initialised.
//
// Go initialises packages in a specified order (since Go 1.21: sorted by
// import path, each as soon as its imports are initialised). This package
// imports only the standard library's lightest packages, and its path sorts
// before the heavy ones the agentos binary links (etcd's and Google's
// protobufs, the OpenAI SDK, prometheus, gRPC), so its init runs before
// theirs; when the command line is exactly `agentos help` (or -h, --help)
// it prints the usage and exits there. Every other command line passes
// through untouched.
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
	"strconv"
	"strings"
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
// go command stores it in the binary.
//
// IMPORTANT: this package MUST NOT import runtime/debug: its path sorts
// after every github.com, go.* and google.* package, so all of those that
// are ready would be initialised before this package's init (235 inits
// instead of 90, and `agentos help` took 2.4 times its page faults and
// its time). The help reads the same text from the executable itself
// (exeModinfo).
func Fields(modinfo string, ok bool) (version, commit string, modified bool) {
	version = Version
	if !ok {
		if version == "" {
			version = "unknown"
		}
		return version, "", false
	}
	for line := range strings.SplitSeq(modinfo, "\n") {
		kind, rest, _ := strings.Cut(line, "\t")
		switch kind {
		case "mod":
			if f := strings.Split(rest, "\t"); version == "" && len(f) > 1 {
				version = f[1]
			}
		case "build":
			key, value := setting(rest)
			switch key {
			case "vcs.revision":
				commit = value
			case "vcs.modified":
				modified = value == "true"
			}
		}
	}
	return version, commit, modified
}

// setting splits a build line's "key=value", either side quoted when it
// holds a space, a quote, a tab or a newline (as BuildInfo.String writes
// it).
func setting(kv string) (key, value string) {
	ok := false
	if strings.HasPrefix(kv, `"`) {
		q, err := strconv.QuotedPrefix(kv)
		if err != nil {
			return "", ""
		}
		key, _ = strconv.Unquote(q)
		value, ok = strings.CutPrefix(kv[len(q):], "=")
	} else {
		key, value, ok = strings.Cut(kv, "=")
	}
	if !ok {
		return "", ""
	}
	if strings.HasPrefix(value, `"`) {
		value, _ = strconv.Unquote(value)
	}
	return key, value
}
