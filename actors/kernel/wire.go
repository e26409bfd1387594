package kernel

import (
	"errors"

	"google.golang.org/protobuf/types/known/timestamppb"

	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/actors/kernel/kernelpb"
	"github.com/agentos-run/agentos/capability"
)

// failure converts err to its wire form (nil for nil).
func failure(err error) *kernelpb.Failure {
	if err == nil {
		return nil
	}
	f := &kernelpb.Failure{Code: kernelclient.FailureCodes.CodeOf(err), Message: err.Error()}
	if qe := (*capability.QuotaError)(nil); errors.As(err, &qe) {
		f.Code = kernelclient.CodeQuota
		f.Quota = &kernelpb.QuotaRefusal{Account: qe.Account, Meter: string(qe.Meter), Limit: qe.Limit, Used: qe.Used, Want: qe.Want, Key: qe.Key}
	}
	return f
}

func procInfoPB(in ProcInfo) *kernelpb.ProcInfo {
	return &kernelpb.ProcInfo{
		Pid: uint64(in.PID), Parent: uint64(in.Parent), Name: in.Name, Image: in.Image, Status: string(in.Status),
		Mailbox: int64(in.Mailbox), Started: timestamppb.New(in.Started), Calls: in.Calls,
		Usage: kernelclient.MetersToPB(in.Usage), Left: kernelclient.MetersToPB(in.Left),
	}
}

func eventPB(e Event) *kernelpb.Event {
	return &kernelpb.Event{
		Seq: e.Seq, Time: timestamppb.New(e.Time), Kind: string(e.Kind), Pid: uint64(e.PID), Parent: uint64(e.Parent),
		Name: e.Name, Reason: e.Reason, Meter: e.Meter, Amount: e.Amount, Detail: e.Detail,
	}
}
