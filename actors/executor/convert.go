package executor

import (
	"encoding/json"
	"time"

	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
)

// Conversions between the executor's domain types and its wire messages
// (executorpb).

func limitsToPB(l Limits) *pb.Limits {
	if l == (Limits{}) {
		return nil
	}
	return &pb.Limits{TimeoutNs: int64(l.Timeout), MemoryBytes: l.MemoryBytes, MaxCallDepth: int64(l.MaxCallDepth), MaxOutputBytes: int64(l.MaxOutputBytes)}
}

func limitsFromPB(l *pb.Limits) Limits {
	return Limits{Timeout: time.Duration(l.GetTimeoutNs()), MemoryBytes: l.GetMemoryBytes(), MaxCallDepth: int(l.GetMaxCallDepth()), MaxOutputBytes: int(l.GetMaxOutputBytes())}
}

func callerToPB(c *Caller) *pb.Caller {
	if c == nil {
		return nil
	}
	return &pb.Caller{Pid: c.PID, Name: c.Name, Holder: c.Holder, Token: c.Token.Encode(), Home: c.Home}
}

func ranOf(res Result, runID string) *pb.Ran {
	r := &pb.Ran{Success: res.Success, Result: res.Result, Logs: res.Logs, Hash: res.Hash, Calls: res.Calls, DurationNs: int64(res.Duration), RunId: runID}
	if e := res.Error; e != nil {
		r.Error = &pb.Error{Kind: string(e.Kind), Message: e.Message, Stack: e.Stack, Code: e.Code}
	}
	return r
}

func resultOf(r *pb.Ran) Result {
	res := Result{Success: r.GetSuccess(), Result: json.RawMessage(r.GetResult()), Logs: r.GetLogs(), Hash: r.GetHash(), Calls: r.GetCalls(), Duration: time.Duration(r.GetDurationNs())}
	if res.Logs == nil {
		res.Logs = []string{}
	}
	if len(res.Result) == 0 {
		res.Result = json.RawMessage("null")
	}
	if e := r.GetError(); e != nil {
		res.Error = &Error{Kind: Kind(e.GetKind()), Message: e.GetMessage(), Stack: e.GetStack(), Code: e.GetCode()}
	}
	return res
}

// The Failure codes (see executor.proto) and the sentinel each names.
var failureCodes = system.FailureCodes{
	{Code: "journal", Err: ErrJournal},
	{Code: "run_key_in_use", Err: ErrRunKeyInUse},
	{Code: "invalid_token", Err: capability.ErrInvalid},
	{Code: "revoked", Err: capability.ErrRevoked},
	{Code: "expired", Err: capability.ErrExpired},
	{Code: "no_authority", Err: ErrNoAuthority},
	{Code: "no_caller", Err: ErrNoCaller},
	{Code: "stale_tool", Err: ErrStaleTool},
	{Code: "not_cleared", Err: ErrNotCleared},
	{Code: system.CodeUnauthenticated, Err: system.ErrUnauthenticated},
	{Code: "denied", Err: capability.ErrDenied},
}

// failureOf is err as a Failure: the code of the first sentinel it wraps
// ("internal" for none), its whole text as the message.
func failureOf(err error) *pb.Failure {
	return &pb.Failure{Code: failureCodes.CodeOf(err), Message: err.Error()}
}

// errorOf is the Go error of a Failure (nil for none): its message, wrapping
// the sentinel its code names, so errors.Is works across the wire.
func errorOf(f *pb.Failure) error {
	if f == nil {
		return nil
	}
	return failureCodes.ErrorOf(f.GetCode(), f.GetMessage(), nil)
}
