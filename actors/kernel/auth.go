package kernel

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentos-run/agentos/actors/kernel/kernelpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
)

// RightCharge is the right of a node of the cluster to charge (and refund,
// and report refusals to) the quota of a process of this node: a forge or
// a tool run placed on that node for the process charges it here. Each
// node mints it for itself (NodeToken); it is never granted to a process
// (a process's token cannot gain it: attenuation adds no right), and the
// capability.Rights a configuration names do not include it.
const RightCharge capability.Right = "charge"

// NodeToken returns a token of the node's authority granting RightCharge
// alone: what the node's requests to another node's kernel actor carry
// (with the cluster's shared key, it verifies there). It is held by
// "node:<name>".
func NodeToken(auth *capability.Authority, name string) capability.Token {
	return auth.Mint("node:"+name, []capability.Grant{{Right: RightCharge}}, capability.Caveats{})
}

// authorize checks that the sender of msg (local: it arrived in a
// system.Local) may make that request; nil for what is not a request.
// The node itself may make every request. A token's holder (a process,
// "pid:<n>") may, as for a local call of that process:
//
//   - PS, EventsQuery, Send, Monitor, Demonitor: with any valid token;
//   - Signal: of itself or a descendant;
//   - Spawn: with itself as parent (parent.Spawn then checks its spawn
//     right and that the grants are its own); never a root process;
//   - Charge, Refund, Refused: of itself or a descendant, or with a token
//     granting RightCharge (another node of the cluster);
//   - Snapshot, Restore: never (the node operator's: they copy a process's
//     rights and budget).
//
// Errors wrap system.ErrUnauthenticated or capability.ErrDenied.
func (a *kernelActor) authorize(msg any, local bool) error {
	t, ok := msg.(interface{ GetToken() string })
	if !ok {
		return nil
	}
	what := fmt.Sprintf("%T", msg)
	what = what[strings.LastIndex(what, ".")+1:]
	from, err := system.Authenticate(a.k.Authority(), local, t.GetToken(), what)
	if err != nil || from.Node {
		return err
	}
	switch m := msg.(type) {
	case *kernelpb.PS, *kernelpb.EventsQuery, *kernelpb.Send, *kernelpb.Monitor, *kernelpb.Demonitor:
		return nil
	case *kernelpb.Signal:
		return a.actsOn(from, PID(m.GetPid()), "signal "+m.GetSignal())
	case *kernelpb.Spawn:
		if m.GetParent() == 0 {
			return fmt.Errorf("%w: spawn of %q with a token needs parent (the token's process): only the node itself spawns a root process", capability.ErrDenied, m.GetImage())
		}
		if h, ok := holderPID(from.Token.Holder); !ok || h != PID(m.GetParent()) {
			return fmt.Errorf("%w: spawn of %q as parent %v with the token of %s: a process spawns only its own children", capability.ErrDenied, m.GetImage(), PID(m.GetParent()), from.Token.Holder)
		}
		return nil
	case *kernelpb.Charge:
		return a.charges(from, PID(m.GetPid()), "charge")
	case *kernelpb.Refund:
		return a.charges(from, PID(m.GetPid()), "refund")
	case *kernelpb.Refused:
		return a.charges(from, PID(m.GetPid()), "refusal report")
	case *kernelpb.Snapshot, *kernelpb.Restore:
		return fmt.Errorf("%w: %s is the node operator's (agentos snapshot, agentos restore on the node): it copies a process's rights and budget, so no token makes it", capability.ErrDenied, what)
	}
	return fmt.Errorf("%w: %s with a token is not a request this kernel serves", capability.ErrDenied, what)
}

// charges checks that from may charge pid's quota: RightCharge, or pid is
// its process or a descendant.
func (a *kernelActor) charges(from system.From, pid PID, what string) error {
	if from.Permit(RightCharge, "") == nil {
		return nil
	}
	return a.actsOn(from, pid, what)
}

// actsOn checks that from's holder is pid or one of pid's ancestors.
func (a *kernelActor) actsOn(from system.From, pid PID, what string) error {
	h, ok := holderPID(from.Token.Holder)
	if ok {
		for p := a.k.Process(pid); p != nil; p = a.k.Process(p.Parent()) {
			if p.PID() == h {
				return nil
			}
			if p.Parent() == 0 {
				break
			}
		}
	}
	return fmt.Errorf("%w: %s of %v with the token of %s: a process acts only on itself and its descendants", capability.ErrDenied, what, pid, from.Token.Holder)
}

// holderPID is the process a token holder "pid:<n>" names.
func holderPID(holder string) (PID, bool) {
	n, err := strconv.ParseUint(strings.TrimPrefix(holder, "pid:"), 10, 64)
	if err != nil || !strings.HasPrefix(holder, "pid:") || n == 0 {
		return 0, false
	}
	return PID(n), true
}
