package client

import (
	"github.com/agentos-run/agentos/actors/kernel/kernelpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/journal"
)

// Conversions from the kernel actor's wire messages (kernelpb) back to the
// domain types, and a Failure back to its error. The actor's side (to the
// wire) is in actors/kernel (wire.go).

// FailureCodes are the stable strings of kernelpb.Failure.code and the
// sentinel each names, in the order the actor tries them; CodeQuota is a
// *capability.QuotaError, carried with its data (Failure.quota).
// IMPORTANT: a code, once used, MUST keep its meaning: another node may be
// older.
var FailureCodes = system.FailureCodes{
	{Code: system.CodeUnauthenticated, Err: system.ErrUnauthenticated},
	{Code: "no_process", Err: ErrNoProcess},
	{Code: "exited", Err: ErrExited},
	{Code: "name_taken", Err: ErrNameTaken},
	{Code: "closed", Err: ErrClosed},
	{Code: "invalid", Err: ErrInvalid},
	{Code: "denied", Err: capability.ErrDenied},
	{Code: "amplify", Err: capability.ErrAmplify},
	{Code: "not_restorable", Err: ErrNotRestorable},
	// a snapshot id that names no run (agentos restore exits 2 for it)
	{Code: "no_run", Err: journal.ErrNoRun},
}

// CodeQuota is the code of a *capability.QuotaError.
const CodeQuota = "quota"

// errorOf converts a wire failure back to an error (nil for nil).
func errorOf(f *kernelpb.Failure) error {
	if f == nil {
		return nil
	}
	var cause error
	if f.GetCode() == CodeQuota {
		qe := &capability.QuotaError{}
		if q := f.GetQuota(); q != nil {
			qe = &capability.QuotaError{Account: q.GetAccount(), Meter: capability.Meter(q.GetMeter()), Limit: q.GetLimit(), Used: q.GetUsed(), Want: q.GetWant(), Key: q.GetKey()}
		}
		cause = qe
	}
	msg := f.GetMessage()
	if msg == "" {
		msg = "kernel: " + f.GetCode()
	}
	return FailureCodes.ErrorOf(f.GetCode(), msg, cause)
}

// MetersToPB converts meter amounts to their wire form (nil for none).
func MetersToPB(m map[capability.Meter]float64) map[string]float64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

// MetersFromPB converts wire meter amounts back (nil for none).
func MetersFromPB(m map[string]float64) map[capability.Meter]float64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[capability.Meter]float64, len(m))
	for k, v := range m {
		out[capability.Meter(k)] = v
	}
	return out
}

func procInfoFromPB(p *kernelpb.ProcInfo) ProcInfo {
	in := ProcInfo{
		PID: PID(p.GetPid()), Parent: PID(p.GetParent()), Name: p.GetName(), Image: p.GetImage(), Status: Status(p.GetStatus()),
		Mailbox: int(p.GetMailbox()), Calls: p.GetCalls(), Usage: MetersFromPB(p.GetUsage()), Left: MetersFromPB(p.GetLeft()),
	}
	if p.GetStarted() != nil {
		in.Started = p.GetStarted().AsTime().Local()
	}
	return in
}

func eventFromPB(e *kernelpb.Event) Event {
	ev := Event{
		Seq: e.GetSeq(), Kind: EventKind(e.GetKind()), PID: PID(e.GetPid()), Parent: PID(e.GetParent()),
		Name: e.GetName(), Reason: e.GetReason(), Meter: e.GetMeter(), Amount: e.GetAmount(), Detail: e.GetDetail(),
	}
	if e.GetTime() != nil {
		ev.Time = e.GetTime().AsTime().Local()
	}
	return ev
}
