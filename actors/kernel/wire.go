package kernel

import (
	"errors"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentos-run/agentos/actors/kernel/kernelpb"
	"github.com/agentos-run/agentos/capability"
)

// Failure codes: the stable strings of kernelpb.Failure.code.
const (
	codeNoProcess = "no_process"
	codeExited    = "exited"
	codeNameTaken = "name_taken"
	codeClosed    = "closed"
	codeInvalid   = "invalid"
	codeDenied    = "denied"
	codeAmplify   = "amplify"
	codeQuota     = "quota"
	codeInternal  = "internal"
)

// failure converts err to its wire form (nil for nil).
func failure(err error) *kernelpb.Failure {
	if err == nil {
		return nil
	}
	f := &kernelpb.Failure{Code: codeInternal, Message: err.Error()}
	var qe *capability.QuotaError
	switch {
	case errors.As(err, &qe):
		f.Code = codeQuota
		f.Quota = &kernelpb.QuotaRefusal{Account: qe.Account, Meter: string(qe.Meter), Limit: qe.Limit, Used: qe.Used, Want: qe.Want, Key: qe.Key}
	case errors.Is(err, ErrNoProcess):
		f.Code = codeNoProcess
	case errors.Is(err, ErrExited):
		f.Code = codeExited
	case errors.Is(err, ErrNameTaken):
		f.Code = codeNameTaken
	case errors.Is(err, ErrClosed):
		f.Code = codeClosed
	case errors.Is(err, ErrInvalid):
		f.Code = codeInvalid
	case errors.Is(err, capability.ErrDenied):
		f.Code = codeDenied
	case errors.Is(err, capability.ErrAmplify):
		f.Code = codeAmplify
	}
	return f
}

// RemoteError is an error that crossed the wire as a kernelpb.Failure: its
// text is the original error's, and errors.Is / errors.As reach the
// kernel's sentinel error (or *capability.QuotaError) its code names.
type RemoteError struct {
	Code    string
	Message string
	cause   error
}

func (e *RemoteError) Error() string { return e.Message }

// Unwrap returns the sentinel error (or *capability.QuotaError) of Code;
// nil for code "internal".
func (e *RemoteError) Unwrap() error { return e.cause }

// failureErr converts a wire failure back to an error (nil for nil).
func failureErr(f *kernelpb.Failure) error {
	if f == nil {
		return nil
	}
	e := &RemoteError{Code: f.Code, Message: f.Message}
	switch f.Code {
	case codeNoProcess:
		e.cause = ErrNoProcess
	case codeExited:
		e.cause = ErrExited
	case codeNameTaken:
		e.cause = ErrNameTaken
	case codeClosed:
		e.cause = ErrClosed
	case codeInvalid:
		e.cause = ErrInvalid
	case codeDenied:
		e.cause = capability.ErrDenied
	case codeAmplify:
		e.cause = capability.ErrAmplify
	case codeQuota:
		qe := &capability.QuotaError{}
		if q := f.Quota; q != nil {
			qe = &capability.QuotaError{Account: q.Account, Meter: capability.Meter(q.Meter), Limit: q.Limit, Used: q.Used, Want: q.Want, Key: q.Key}
		}
		e.cause = qe
	}
	if e.Message == "" {
		e.Message = "kernel: " + f.Code
	}
	return e
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
