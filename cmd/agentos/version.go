package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/cmd/agentos/internal/quickhelp"
)

// versionInfo is what `agentos version --json` prints.
type versionInfo struct {
	Version    string            `json:"version"`
	Go         string            `json:"go"`
	Platform   string            `json:"platform"`
	Module     string            `json:"module"`
	Commit     string            `json:"commit,omitempty"`
	CommitTime string            `json:"commit_time,omitempty"`
	Modified   bool              `json:"modified,omitempty"`
	Build      map[string]string `json:"build_settings"`
	Deps       []versionDep      `json:"deps"`
	// Isolation is where tools of the tool root run: "process" (sandbox
	// workers, confined as Protections says) or "inprocess" (nothing to
	// confine: the host's own rights).
	Isolation string `json:"isolation"`
	// Protections is what a sandbox worker started just now, with the tool
	// root's settings, reported in force (measured by the worker itself).
	Protections *executor.Protections `json:"protections,omitempty"`
	// ProtectionsError says why no worker could report (e.g. confine
	// "required" on a kernel that cannot confine).
	ProtectionsError string `json:"protections_error,omitempty"`
	// Worker is the program started as the sandbox workers: agentos-worker
	// next to this binary (separate) or this binary again, and why.
	Worker *executor.WorkerBinary `json:"worker,omitempty"`
	// DeniedSyscalls are the system calls a confined worker refuses.
	DeniedSyscalls []string `json:"denied_syscalls,omitempty"`
	// ConfigError says why the tool root's agentos.json was not used (the
	// defaults were).
	ConfigError string `json:"config_error,omitempty"`
}

type versionDep struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// runVersion prints the build and the OS-level protections of the sandbox
// workers on this machine: agentos version [--root DIR] [--json] (also
// agentos --version). Exit status 1 when no worker could start.
func runVersion(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	root := fs.String("root", ".", "the tool root `DIR` whose settings (isolation, confine, memory) the probe uses (default: the nearest directory holding agentos.json, from the current one up)")
	asJSON := fs.Bool("json", false, "print one JSON object {version, go, platform, commit, isolation, protections, ...}")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("version takes no arguments, got %q", pos)
	}
	info := buildVersion()
	opts := executor.Options{}
	if abs, cfg, err := openDir(*root, false); err != nil {
		info.ConfigError = err.Error()
	} else {
		opts = cfg.ExecutorOptions(abs)
	}
	info.Isolation = string(executor.IsolationProcess)
	if opts.Isolation == executor.IsolationInProcess {
		info.Isolation = string(opts.Isolation)
	}
	if info.Isolation == string(executor.IsolationProcess) {
		if wb, err := executor.FindWorkerBinary(); err == nil {
			info.Worker = &wb
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	prot, err := executor.Probe(ctx, opts)
	if err != nil {
		info.ProtectionsError = err.Error()
	} else {
		info.Protections = &prot
		if prot.Seccomp.Active {
			info.DeniedSyscalls = executor.DeniedSyscalls()
		}
	}
	if *asJSON {
		if err := fprintJSON(stdout, info); err != nil {
			return err
		}
	} else {
		printVersion(stdout, info)
	}
	if info.ProtectionsError != "" {
		return errFailed
	}
	return nil
}

// build is the version, commit and modified flag of this binary
// (quickhelp.Fields of runtime/debug's build information): what the help's
// first line and `agentos version` say.
func build() (version, commit string, modified bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return quickhelp.Fields("", false)
	}
	return quickhelp.Fields(bi.String(), true)
}

// buildVersion reads the build information of this binary: the version,
// commit and modified flag as build reads them for the help's first line,
// and the rest of it.
func buildVersion() versionInfo {
	info := versionInfo{Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Build: map[string]string{}, Deps: []versionDep{}}
	info.Version, info.Commit, info.Modified = build()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.Module = bi.Main.Path
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.modified": // build's
		case "vcs.time":
			info.CommitTime = s.Value
		default:
			info.Build[s.Key] = s.Value
		}
	}
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil {
			v += " => " + d.Replace.Path + " " + d.Replace.Version
		}
		info.Deps = append(info.Deps, versionDep{Path: d.Path, Version: v})
	}
	return info
}

func printVersion(w io.Writer, info versionInfo) {
	fmt.Fprintln(w, quickhelp.Head(info.Version, info.Commit, info.Modified))
	if info.ConfigError != "" {
		fmt.Fprintf(w, "tool root settings not used (%s): defaults probed\n", info.ConfigError)
	}
	if info.Isolation == string(executor.IsolationInProcess) {
		fmt.Fprintln(w, "isolation: inprocess: tools run inside the agentos process itself, with none of the protections below")
	}
	if info.Worker != nil {
		fmt.Fprintf(w, "sandbox worker program: %s\n", info.Worker)
	}
	if info.ProtectionsError != "" {
		fmt.Fprintf(w, "sandbox workers: %s\n", info.ProtectionsError)
		return
	}
	p := info.Protections
	fmt.Fprintf(w, "sandbox worker protections on this machine (confine: %s):\n", p.Mode)
	state := func(active bool, detail string) string {
		if active {
			return "active: " + detail
		}
		return "INACTIVE: " + detail
	}
	rl := "no address-space limit"
	if p.RlimitAS.Active {
		rl = fmt.Sprintf("%.1f GiB of address space", float64(p.RlimitAS.Bytes)/(1<<30))
	}
	fmt.Fprintf(w, "  %-13s %s\n", "rlimit_as", state(p.RlimitAS.Active, rl))
	ll := p.Landlock.Reason
	if p.Landlock.Active {
		ll = fmt.Sprintf("ABI %d, nothing allowed (%s)", p.Landlock.ABI, strings.Join(p.Landlock.Restricts, ", "))
	}
	fmt.Fprintf(w, "  %-13s %s\n", "landlock", state(p.Landlock.Active, ll))
	sc := p.Seccomp.Reason
	if p.Seccomp.Active {
		sc = fmt.Sprintf("%d system calls refused with %s (agentos version --json lists them)", p.Seccomp.Denied, p.Seccomp.Action)
	}
	fmt.Fprintf(w, "  %-13s %s\n", "seccomp", state(p.Seccomp.Active, sc))
	nnp := "set on every thread"
	if !p.NoNewPrivs {
		nnp = "not set"
	}
	fmt.Fprintf(w, "  %-13s %s\n", "no_new_privs", state(p.NoNewPrivs, nnp))
}
