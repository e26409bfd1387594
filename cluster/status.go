package cluster

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/cluster/clusterpb"
)

// StatusActor is the name of the actor every member serving its status
// (ServeStatus) answers clusterpb.StatusQuery with.
const StatusActor = "agentos-cluster-status"

// NodeStatus is one member's Status as it answered, with the labels its
// owner gave ServeStatus (a node's tool root and OS process id).
type NodeStatus struct {
	Status
	Labels map[string]string
	// Err is why the member did not answer ("" when it did).
	Err string
}

// ServeStatus makes the member answer ClusterStatus queries from the other
// members, describing itself with labels. Call it once, after Join.
func (m *Member) ServeStatus(labels map[string]string) error {
	labels = maps.Clone(labels)
	_, err := m.sys.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*clusterpb.StatusQuery); ok {
			c.Respond(statusToPB(m.Status(), labels))
		}
	}), StatusActor)
	if err != nil {
		return fmt.Errorf("cluster: serving the member's status: %w", err)
	}
	return nil
}

// ClusterStatus asks every member this one sees alive (itself included)
// for its status, concurrently, each within Options.RequestTimeout and
// ctx. A member that does not answer is listed with Err. The list is
// sorted by address.
func (m *Member) ClusterStatus(ctx context.Context) []NodeStatus {
	alive := m.Status().Alive()
	out := make([]NodeStatus, len(alive))
	var wg sync.WaitGroup
	for i, info := range alive {
		wg.Go(func() {
			res, err := system.Ask(ctx, m.root, actor.NewPID(info.Address, StatusActor), &clusterpb.StatusQuery{}, m.opts.RequestTimeout)
			s, ok := res.(*clusterpb.Status)
			switch {
			case err != nil:
				out[i] = NodeStatus{Status: Status{Self: info.ID, Address: info.Address}, Err: err.Error()}
			case !ok:
				out[i] = NodeStatus{Status: Status{Self: info.ID, Address: info.Address}, Err: fmt.Sprintf("answered a %T", res)}
			default:
				out[i] = statusFromPB(s)
			}
		})
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

func statusToPB(s Status, labels map[string]string) *clusterpb.Status {
	p := &clusterpb.Status{Self: s.Self, Address: s.Address, Labels: labels}
	for _, mi := range s.Members {
		p.Members = append(p.Members, &clusterpb.Member{Id: mi.ID, Address: mi.Address, Kinds: mi.Kinds, Alive: mi.Alive})
	}
	for _, a := range s.Activations {
		p.Activations = append(p.Activations, &clusterpb.Activation{Kind: a.Kind, Identity: a.Identity})
	}
	return p
}

func statusFromPB(p *clusterpb.Status) NodeStatus {
	s := NodeStatus{Status: Status{Self: p.GetSelf(), Address: p.GetAddress()}, Labels: p.GetLabels()}
	for _, mi := range p.GetMembers() {
		s.Members = append(s.Members, MemberInfo{ID: mi.GetId(), Address: mi.GetAddress(), Kinds: mi.GetKinds(), Alive: mi.GetAlive()})
	}
	for _, a := range p.GetActivations() {
		s.Activations = append(s.Activations, Activation{Kind: a.GetKind(), Identity: a.GetIdentity()})
	}
	return s
}
