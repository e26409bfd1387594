package client

import (
	"encoding/json"
	"time"

	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/journal"
)

// Conversions between the client's domain types and the executor actor's
// wire messages (executorpb). The actor's side (executor/convert.go)
// converts the other way.

func limitsToPB(l sandbox.Limits) *pb.Limits {
	if l == (sandbox.Limits{}) {
		return nil
	}
	return &pb.Limits{TimeoutNs: int64(l.Timeout), MemoryBytes: l.MemoryBytes, MaxCallDepth: int64(l.MaxCallDepth), MaxOutputBytes: int64(l.MaxOutputBytes)}
}

func limitsFromPB(l *pb.Limits) sandbox.Limits {
	return sandbox.Limits{Timeout: time.Duration(l.GetTimeoutNs()), MemoryBytes: l.GetMemoryBytes(), MaxCallDepth: int(l.GetMaxCallDepth()), MaxOutputBytes: int(l.GetMaxOutputBytes())}
}

func callerToPB(c *Caller) *pb.Caller {
	if c == nil {
		return nil
	}
	tok := c.TokenText
	if tok == "" {
		tok = c.Token.Encode()
	}
	return &pb.Caller{Pid: c.PID, Name: c.Name, Holder: c.Holder, Token: tok, Home: c.Home}
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
		res.Error = &sandbox.Error{Kind: sandbox.Kind(e.GetKind()), Message: e.GetMessage(), Stack: e.GetStack(), Code: e.GetCode()}
	}
	return res
}

// replayToPB is a Replay of run id with opts.
func replayToPB(id string, opts ReplayOptions) *pb.Replay {
	return &pb.Replay{RunId: id, Patched: opts.Patched, Sources: opts.Sources, Limits: limitsToPB(opts.Limits), MaxTimeoutNs: int64(opts.MaxTimeout)}
}

// replayedOf is a Replayed reply as the client's type.
func replayedOf(r *pb.Replayed) Replayed {
	out := Replayed{Result: resultOf(r.GetResult()), Patched: r.GetPatched(), Same: r.GetSame(), Limits: limitsFromPB(r.GetLimits()),
		LimitsNote: r.GetLimitsNote(), LimitHit: r.GetLimitHit(), FromTree: r.GetFromTree(), ModulesNote: r.GetModulesNote()}
	if d := r.GetDivergence(); d != nil {
		out.Divergence = &journal.DivergenceError{Code: d.GetCode(), RunID: d.GetRunId(), Seq: d.GetSeq(), Expected: d.GetExpected(), Actual: d.GetActual()}
	}
	return out
}

// errorOf is the Go error of a Failure (nil for none): its message, wrapping
// the sentinel its code names, so errors.Is works across the wire.
func errorOf(f *pb.Failure) error {
	if f == nil {
		return nil
	}
	return FailureCodes.ErrorOf(f.GetCode(), f.GetMessage(), nil)
}
