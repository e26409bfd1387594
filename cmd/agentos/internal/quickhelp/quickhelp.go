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
	"runtime/debug"
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
	os.Stdout.WriteString(Head(Build()) + ": " + Tagline + "\n" + Usage)
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

// Build returns the version (Version, else the module's, else "unknown"),
// the VCS revision and whether the tree was modified, from the build
// information.
func Build() (version, commit string, modified bool) {
	version = Version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if version == "" {
			version = "unknown"
		}
		return version, "", false
	}
	if version == "" {
		version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return version, commit, modified
}
