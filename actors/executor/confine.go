package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/agentos-run/agentos/actors/executor/internal/confine"
)

// Confine is how sandbox workers confine themselves at the OS level.
//
// A worker needs nothing from the OS once it runs: every file, network or
// database access of a tool is a driver call answered by the parent. So,
// after setting its RLIMIT_AS and before reading its first job, a worker
//   - restricts itself with Landlock to no filesystem access at all, no TCP
//     bind or connect, and no signals or abstract UNIX sockets outside itself
//     (as far as the kernel's Landlock ABI goes);
//   - installs a seccomp filter (all threads) that refuses with EPERM the
//     system calls that open files or sockets, start programs or processes,
//     touch other processes (ptrace, process_vm_*, kill but to itself),
//     mount, change identity or widen the kernel's attack surface (bpf,
//     io_uring, userfaultfd, perf_event_open, keyctl, modules, kexec ...),
//     and kills it on a system call made with a foreign ABI;
//   - sets no_new_privs on every thread.
//
// Its first frame to the parent (hello) reports what is in force, measured
// by the worker itself: see Protections.
type Confine = confine.Mode

// The confine modes.
const (
	// ConfineBestEffort applies what the kernel supports and logs a warning
	// naming what it lacks; runs go on. The default.
	ConfineBestEffort = confine.BestEffort
	// ConfineRequired makes workers refuse to start without Landlock,
	// seccomp and no_new_privs: every run then fails with Kind "crash" and
	// a message naming what is missing.
	ConfineRequired = confine.Required
	// ConfineOff applies nothing but RLIMIT_AS (debugging only).
	ConfineOff = confine.Off
)

// Protections is what a sandbox worker reports it has in force.
type Protections = confine.Report

// DeniedSyscalls lists the system calls a confined worker refuses (outright
// or by argument) on this platform.
func DeniedSyscalls() []string { return confine.DeniedSyscalls() }

// Protections returns what the executor's most recently started worker
// reported in force, and false when no worker has reported yet (or tools run
// in-process, where nothing is confined).
func (e *Executor) Protections() (Protections, bool) {
	if e.pool == nil {
		return Protections{}, false
	}
	p := e.pool.prot.Load()
	if p == nil {
		return Protections{}, false
	}
	return *p, true
}

// hello records a worker's report; the first incomplete one in best-effort
// mode is logged as a warning.
func (p *pool) hello(prot *Protections) {
	if prot == nil {
		return
	}
	p.prot.Store(prot)
	if prot.Mode == confine.BestEffort && !prot.Complete() {
		p.warnOnce.Do(func() {
			p.log.Warn("agentos: sandbox workers run with less OS confinement than they could; tools still run, with the other limits",
				"missing", prot.Missing())
		})
	}
}

// Probe starts one sandbox worker as opts say (only WorkerCommand, Limits and
// Confine matter), reads the protections it reports, and stops it. The
// program MUST call WorkerMain (see the package documentation). With
// ConfineRequired on a kernel that cannot confine, it returns an error
// saying what is missing.
func Probe(ctx context.Context, opts Options) (Protections, error) {
	mode, err := confine.ParseMode(string(opts.Confine))
	if err != nil {
		return Protections{}, fmt.Errorf("executor: %w", err)
	}
	opts.Confine = mode
	opts.Limits = opts.Limits.WithDefaults()
	if err := ctx.Err(); err != nil {
		return Protections{}, err
	}
	p := &pool{opts: opts, log: slog.New(slog.NewTextHandler(io.Discard, nil)), all: map[*worker]struct{}{}}
	w, err := p.spawn()
	if err != nil {
		return Protections{}, err
	}
	defer func() {
		_ = w.stdin.Close() // the worker exits at EOF
		p.wg.Wait()
	}()
	got := make(chan *frame, 1)
	go func() {
		f, _ := readFrame(w.out)
		got <- f
	}()
	var f *frame
	select {
	case f = <-got:
	case <-ctx.Done():
		w.kill("cancelled")
		<-got
		return Protections{}, ctx.Err()
	}
	if f == nil || f.T != "hello" || f.Prot == nil {
		w.kill("retired")
		<-w.exited
		msg := strings.TrimSpace(lastLines(w.stderr.String(), 3))
		if msg == "" {
			msg = fmt.Sprintf("it exited (%v) without saying why", w.cmd.ProcessState)
		}
		return Protections{}, fmt.Errorf("the sandbox worker did not start: %s", msg)
	}
	if why := foreignWorker(w, f.Build); why != "" {
		w.kill("foreign")
		return Protections{}, errors.New(why)
	}
	return *f.Prot, nil
}
