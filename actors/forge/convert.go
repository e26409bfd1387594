package forge

import (
	"context"
	"encoding/json"
	"errors"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	epb "github.com/agentos-run/agentos/actors/executor/executorpb"
	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/journal"
)

// Conversions between the forge's domain types and its wire messages
// (forgepb).

// callerOf is the executor's Caller of a wire caller (nil for none). The
// token is decoded, not verified: the executor actor verifies it on every
// test run, and a token that does not decode is passed on empty, to be
// refused there.
func callerOf(c *epb.Caller) *execclient.Caller {
	if c == nil {
		return nil
	}
	tok, _ := capability.Decode(c.GetToken())
	return &execclient.Caller{PID: c.GetPid(), Name: c.GetName(), Holder: c.GetHolder(), Token: tok, Home: c.GetHome()}
}

func callerToPB(c *execclient.Caller) *epb.Caller {
	if c == nil {
		return nil
	}
	return &epb.Caller{Pid: c.PID, Name: c.Name, Holder: c.Holder, Token: c.Token.Encode(), Home: c.Home}
}

func resultToPB(r Result) *pb.Result {
	out := &pb.Result{Reused: r.Reused, Path: r.Path, Score: r.Score, Tests: r.Tests, Commit: r.Commit, RunId: r.RunID,
		Usage: &pb.Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, TotalTokens: r.Usage.TotalTokens, CostUsd: r.Usage.CostUSD}}
	for _, a := range r.Attempts {
		out.Attempts = append(out.Attempts, &pb.Attempt{N: int64(a.N), Path: a.Path, Errors: a.Errors, Passed: a.Passed})
	}
	if r.Gate != nil {
		out.Gate, _ = json.Marshal(r.Gate)
	}
	return out
}

func resultFromPB(r *pb.Result) Result {
	u := r.GetUsage()
	out := Result{Reused: r.GetReused(), Path: r.GetPath(), Score: r.GetScore(), Tests: r.GetTests(), Commit: r.GetCommit(), RunID: r.GetRunId(),
		Usage: llm.Usage{PromptTokens: u.GetPromptTokens(), CompletionTokens: u.GetCompletionTokens(), TotalTokens: u.GetTotalTokens(), CostUSD: u.GetCostUsd()}}
	for _, a := range r.GetAttempts() {
		out.Attempts = append(out.Attempts, Attempt{N: int(a.GetN()), Path: a.GetPath(), Errors: a.GetErrors(), Passed: a.GetPassed()})
	}
	if b := r.GetGate(); len(b) > 0 {
		var g gate.Report
		if json.Unmarshal(b, &g) == nil {
			out.Gate = &g
		}
	}
	return out
}

// The Failure codes (see forge.proto) and the sentinel each names.
var failureCodes = system.FailureCodes{
	{Code: system.CodeUnauthenticated, Err: system.ErrUnauthenticated},
	{Code: "options", Err: ErrOptions},
	{Code: "spec", Err: ErrSpec},
	{Code: "gave_up", Err: ErrGaveUp},
	{Code: "no_model", Err: ErrNoModel},
	{Code: "cancelled", Err: context.Canceled},
	{Code: "caller_gone", Err: ErrCallerGone},
	{Code: "denied", Err: capability.ErrDenied},
	{Code: "gate_blocked", Err: gate.ErrBlocked},
	// Another claim superseded the forge's run (journal.ErrFenced wraps
	// it): another node resumed it; the grain looks for its outcome.
	{Code: "claimed", Err: journal.ErrClaimed},
}

func doneOf(res Result, err error) *pb.Done {
	d := &pb.Done{Result: resultToPB(res)}
	if err == nil {
		return d
	}
	f := &pb.Failure{Code: failureCodes.CodeOf(err), Message: err.Error()}
	if qe := (*capability.QuotaError)(nil); errors.As(err, &qe) {
		f.Code, f.Meter = "quota", string(qe.Meter)
	}
	d.Failure = f
	return d
}

// errorOf is the Go error of a Failure (nil for none): its message,
// wrapping the sentinel its code names, so errors.Is (and, for a quota,
// errors.As *capability.QuotaError with the meter) works across the wire.
func errorOf(f *pb.Failure) error {
	if f == nil {
		return nil
	}
	var cause error
	if f.GetCode() == "quota" {
		cause = &capability.QuotaError{Meter: capability.Meter(f.GetMeter())}
	}
	return failureCodes.ErrorOf(f.GetCode(), f.GetMessage(), cause)
}
