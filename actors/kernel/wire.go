package kernel

import (
	"errors"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentos-run/agentos/actors/kernel/kernelpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/journal"
)

// failureCodes are the stable strings of kernelpb.Failure.code and the
// sentinel each names; "quota" is a *capability.QuotaError, carried with its
// data (Failure.quota). IMPORTANT: a code, once used, MUST keep its
// meaning: another node may be older.
var failureCodes = system.FailureCodes{
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

// codeQuota is the code of a *capability.QuotaError.
const codeQuota = "quota"

// failure converts err to its wire form (nil for nil).
func failure(err error) *kernelpb.Failure {
	if err == nil {
		return nil
	}
	f := &kernelpb.Failure{Code: failureCodes.CodeOf(err), Message: err.Error()}
	if qe := (*capability.QuotaError)(nil); errors.As(err, &qe) {
		f.Code = codeQuota
		f.Quota = &kernelpb.QuotaRefusal{Account: qe.Account, Meter: string(qe.Meter), Limit: qe.Limit, Used: qe.Used, Want: qe.Want, Key: qe.Key}
	}
	return f
}

// RemoteError is an error that crossed the wire as a kernelpb.Failure: its
// text is the original error's, and errors.Is / errors.As reach the
// kernel's sentinel error (or *capability.QuotaError) its code names.
type RemoteError = system.RemoteError

// failureErr converts a wire failure back to an error (nil for nil).
func failureErr(f *kernelpb.Failure) error {
	if f == nil {
		return nil
	}
	var cause error
	if f.GetCode() == codeQuota {
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
	return failureCodes.ErrorOf(f.GetCode(), msg, cause)
}

func meters(m map[capability.Meter]float64) map[string]float64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

func fromMeters(m map[string]float64) map[capability.Meter]float64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[capability.Meter]float64, len(m))
	for k, v := range m {
		out[capability.Meter(k)] = v
	}
	return out
}

func procInfoPB(in ProcInfo) *kernelpb.ProcInfo {
	return &kernelpb.ProcInfo{
		Pid: uint64(in.PID), Parent: uint64(in.Parent), Name: in.Name, Image: in.Image, Status: string(in.Status),
		Mailbox: int64(in.Mailbox), Started: timestamppb.New(in.Started), Calls: in.Calls,
		Usage: meters(in.Usage), Left: meters(in.Left),
	}
}

func procInfo(p *kernelpb.ProcInfo) ProcInfo {
	in := ProcInfo{
		PID: PID(p.GetPid()), Parent: PID(p.GetParent()), Name: p.GetName(), Image: p.GetImage(), Status: Status(p.GetStatus()),
		Mailbox: int(p.GetMailbox()), Calls: p.GetCalls(), Usage: fromMeters(p.GetUsage()), Left: fromMeters(p.GetLeft()),
	}
	if p.GetStarted() != nil {
		in.Started = p.GetStarted().AsTime().Local()
	}
	return in
}

func eventPB(e Event) *kernelpb.Event {
	return &kernelpb.Event{
		Seq: e.Seq, Time: timestamppb.New(e.Time), Kind: string(e.Kind), Pid: uint64(e.PID), Parent: uint64(e.Parent),
		Name: e.Name, Reason: e.Reason, Meter: e.Meter, Amount: e.Amount, Detail: e.Detail,
	}
}

func event(e *kernelpb.Event) Event {
	ev := Event{
		Seq: e.GetSeq(), Kind: EventKind(e.GetKind()), PID: PID(e.GetPid()), Parent: PID(e.GetParent()),
		Name: e.GetName(), Reason: e.GetReason(), Meter: e.GetMeter(), Amount: e.GetAmount(), Detail: e.GetDetail(),
	}
	if e.GetTime() != nil {
		ev.Time = e.GetTime().AsTime().Local()
	}
	return ev
}
