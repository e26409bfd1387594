package executor

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var confineModes = []Confine{ConfineOff, ConfineBestEffort}

// BenchmarkWorkerStart starts a worker, waits for its hello and stops it:
// what confinement adds to a worker's start (it is paid once per worker,
// not per run). worker-cpu-µs/op is the worker's own CPU time, setup-µs/op
// the time the worker reports applying and checking its confinement took.
func BenchmarkWorkerStart(b *testing.B) {
	for _, mode := range confineModes {
		b.Run("confine="+string(mode), func(b *testing.B) {
			var setup float64
			var before syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
			for b.Loop() {
				prot, err := Probe(context.Background(), Options{Confine: mode})
				if err != nil {
					b.Fatal(err)
				}
				if mode != ConfineOff && !prot.Complete() {
					b.Skipf("workers are not fully confined on this machine (%s): nothing to compare", prot.Missing())
				}
				setup += prot.SetupMicros
			}
			var after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N), "worker-cpu-µs/op")
			b.ReportMetric(setup/float64(b.N), "setup-µs/op")
		})
	}
}

// BenchmarkExecCachedWorkerConfine is BenchmarkExecCachedWorker (fib(10),
// cached) with confinement off and on; io does 50 tgp.read_file calls per
// run, each a round trip over the worker's pipes (the system calls the
// seccomp filter sees).
func BenchmarkExecCachedWorkerConfine(b *testing.B) {
	tools := map[string]string{
		"tools/math/fib.ts": fibTool,
		"tools/io.ts":       "export default async () => { let n = 0; for (let i = 0; i < 50; i++) n += (await tgp.read_file('data.txt')).length; return n; };\n",
		"data.txt":          "hello",
	}
	for _, tc := range []struct{ name, path, want string }{{"fib", "tools/math/fib.ts", "55"}, {"io", "tools/io.ts", "250"}} {
		for _, mode := range confineModes {
			b.Run(tc.name+"/confine="+string(mode), func(b *testing.B) {
				e := newExec(b, IsolationProcess, tools, func(o *Options) { o.Workers = 1; o.Confine = mode })
				req := Request{Path: tc.path, Args: json.RawMessage(`{"n": 10}`)}
				if r := e.Exec(context.Background(), req); !r.Success || string(r.Result) != tc.want { // warm up
					b.Fatalf("%+v", r)
				}
				if p, _ := e.Protections(); mode != ConfineOff && !p.Complete() {
					b.Skipf("workers are not fully confined on this machine (%s): nothing to compare", p.Missing())
				}
				pid := workerPID(e)
				cpu := procCPU(pid)
				for b.Loop() {
					if r := e.Exec(context.Background(), req); !r.Success {
						b.Fatal(r.Error)
					}
				}
				if pid == workerPID(e) && cpu >= 0 { // same worker throughout
					b.ReportMetric(float64(procCPU(pid)-cpu)/float64(time.Microsecond)/float64(b.N), "worker-cpu-µs/op")
				}
			})
		}
	}
}

// workerPID returns the pid of the executor's only worker (0: none), once
// a surplus worker started before the prewarmed one was ready has exited.
func workerPID(e *Executor) int {
	for range 200 {
		e.pool.mu.Lock()
		n := len(e.pool.all)
		for w := range e.pool.all {
			if n == 1 {
				e.pool.mu.Unlock()
				return w.cmd.Process.Pid
			}
		}
		e.pool.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	return 0
}

// procCPU returns the CPU time process pid has used (clock-tick resolution),
// or -1.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 (state) on
	ut, err1 := strconv.ParseInt(f[11], 10, 64)              // field 14: utime
	st, err2 := strconv.ParseInt(f[12], 10, 64)              // field 15: stime
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(ut+st) * (time.Second / 100) // USER_HZ is 100 on Linux
}
