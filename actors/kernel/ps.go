package kernel

import (
	"slices"
	"time"

	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/capability"
)

// Meters lists the quota meters ps reports, in display order.
var Meters = capability.Meters

// ProcInfo is one row of ps (the kernel client's type).
type ProcInfo = kernelclient.ProcInfo

// PS returns the live processes, by PID.
func (k *Kernel) PS() []ProcInfo {
	all := k.all()
	slices.SortFunc(all, func(a, b *Process) int { return int(a.pid) - int(b.pid) })
	out := make([]ProcInfo, 0, len(all))
	for _, p := range all {
		out = append(out, p.info())
	}
	return out
}

// Info returns the process's ps row.
func (p *Process) Info() ProcInfo { return p.info() }

func (p *Process) info() ProcInfo {
	p.mu.Lock()
	in := ProcInfo{PID: p.pid, Parent: p.parent, Name: p.name, Image: p.image, Mailbox: len(p.box) - p.head, Started: p.started, Calls: p.calls.Load()}
	switch {
	case p.dead:
		in.Status = Dead
	case p.stopped:
		in.Status = Stopped
	case p.waiting:
		in.Status = Waiting
	default:
		in.Status = Running
	}
	p.mu.Unlock()
	for _, m := range Meters {
		if u := p.acct.Used(m); u != 0 {
			if in.Usage == nil {
				in.Usage = map[capability.Meter]float64{}
			}
			in.Usage[m] = u
		}
		if m == capability.WallMS && !p.wallDeadline.IsZero() {
			if in.Left == nil {
				in.Left = map[capability.Meter]float64{}
			}
			in.Left[m] = float64(max(0, time.Until(p.wallDeadline).Milliseconds()))
			continue
		}
		if l, ok := p.acct.Left(m); ok {
			if in.Left == nil {
				in.Left = map[capability.Meter]float64{}
			}
			in.Left[m] = l
		}
	}
	return in
}
