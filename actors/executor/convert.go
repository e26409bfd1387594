package executor

import (
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
)

// Conversions between the executor's domain types and its wire messages
// (executorpb), on the actor's side; the client's side is in
// actors/executor/client.

func limitsToPB(l Limits) *pb.Limits {
	if l == (Limits{}) {
		return nil
	}
	return &pb.Limits{TimeoutNs: int64(l.Timeout), MemoryBytes: l.MemoryBytes, MaxCallDepth: int64(l.MaxCallDepth), MaxOutputBytes: int64(l.MaxOutputBytes)}
}

// durationNs is a wire duration in nanoseconds as a time.Duration.
func durationNs(ns int64) time.Duration { return time.Duration(ns) }

func limitsFromPB(l *pb.Limits) Limits {
	return Limits{Timeout: time.Duration(l.GetTimeoutNs()), MemoryBytes: l.GetMemoryBytes(), MaxCallDepth: int(l.GetMaxCallDepth()), MaxOutputBytes: int(l.GetMaxOutputBytes())}
}

func ranOf(res execclient.Result, runID string) *pb.Ran {
	r := &pb.Ran{Success: res.Success, Result: res.Result, Logs: res.Logs, Hash: res.Hash, Calls: res.Calls, DurationNs: int64(res.Duration), RunId: runID}
	if e := res.Error; e != nil {
		r.Error = &pb.Error{Kind: string(e.Kind), Message: e.Message, Stack: e.Stack, Code: e.Code}
	}
	return r
}

// failureOf is err as a Failure: the code of the first sentinel it wraps
// ("internal" for none), its whole text as the message.
func failureOf(err error) *pb.Failure {
	return &pb.Failure{Code: execclient.FailureCodes.CodeOf(err), Message: err.Error()}
}
