package kerneltools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/forgerun"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/capability/capabilitypb"
	"github.com/agentos-run/agentos/cluster"
	"github.com/agentos-run/agentos/journal"
)

// The cluster's pub-sub topics a node uses.
const (
	// TopicTools carries gitpb.Committed: every commit a node pushed to the
	// shared branch, so that the other nodes pull it before they serve a
	// tool.
	TopicTools = "agentos.tools"
	// TopicRevocations carries capabilitypb.Revocations: the capability
	// tokens a node revoked, applied by every other node.
	TopicRevocations = "agentos.revocations"
)

// publishTimeout bounds one publication on the cluster's pub-sub.
const publishTimeout = 10 * time.Second

// clustered is the node's side of its cluster membership (nil while the
// node is alone).
type clustered struct {
	m      *cluster.Member
	ctx    context.Context // ends when the node leaves
	cancel context.CancelFunc
	wg     sync.WaitGroup // publications and announcements in flight
	undo   []func()

	// token is this node's own token (kernel.NodeToken): what its
	// requests to another node's kernel actor carry (a charge for a forge
	// or run placed here).
	token string

	mu      sync.Mutex
	pending map[string]bool // commits announced, not yet in the tool root
}

// JoinCluster makes the node a member of the cluster opts describes, on the
// node's own actor system: forges become the cluster kind forge.GrainKind
// (one activation per spec in the whole cluster, forge_tool goes through
// it), the commits this node pushes are published on TopicTools and the
// ones other nodes push are pulled before a tool is read or run here, and
// capability revocations travel on TopicRevocations both ways. Leave with
// LeaveCluster (Close does it too).
//
// IMPORTANT: every node of a cluster MUST sign capability tokens with the
// same key (agentos.json capability.signing_key_env), or the tokens of a
// process on one node are refused on the others.
func (n *Node) JoinCluster(ctx context.Context, opts cluster.Options) (*cluster.Member, error) {
	n.clusterMu.Lock()
	defer n.clusterMu.Unlock()
	if n.cl != nil {
		return nil, fmt.Errorf("%w: the node is already a member of a cluster", ErrCluster)
	}
	if opts.Logger == nil {
		opts.Logger = n.opts.Logger
	}
	opts.System = n.sys
	opts.Kinds = append(opts.Kinds, cluster.Kind{Name: forge.GrainKind, Props: forge.GrainProps(forge.GrainOptions{
		Forge: n.forgeClient, Pending: n.pendingForge, Finished: n.finishedForge, Failed: n.failedForge, Logger: n.opts.Logger,
		Authority: n.k.Authority(),
	})})
	m, err := cluster.Join(ctx, opts)
	if err != nil {
		return nil, err
	}
	c := &clustered{m: m, pending: map[string]bool{}, token: kernel.NodeToken(n.k.Authority(), m.Address()).Encode()}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	fail := func(err error) (*cluster.Member, error) {
		c.close(context.Background())
		return nil, err
	}
	unsub, err := m.Subscribe(ctx, TopicTools, func(msg proto.Message) {
		if cm, ok := msg.(*gitpb.Committed); ok {
			n.onAnnounced(c, cm)
		}
	})
	if err != nil {
		return fail(fmt.Errorf("%w: subscribing to %s: %w", ErrCluster, TopicTools, err))
	}
	c.undo = append(c.undo, unsub)
	// Commits announced before this node listened (while it was down, or
	// between its start's pull and now) are pulled now.
	if _, err := n.gitClient.Pull(ctx); err != nil && !errors.Is(err, gitclient.ErrNoRepo) {
		n.opts.Logger.Warn("cluster: catching up with the upstream after joining", slog.Any("err", err))
	}
	auth := n.k.Authority()
	if unsub, err = m.Subscribe(ctx, TopicRevocations, func(msg proto.Message) {
		if rs, ok := msg.(*capabilitypb.Revocations); ok {
			if _, err := auth.Apply(capability.RevocationsFromProto(rs)...); err != nil {
				n.opts.Logger.Warn("cluster: a revocation from another node was refused", slog.Any("err", err))
			}
		}
	}); err != nil {
		return fail(fmt.Errorf("%w: subscribing to %s: %w", ErrCluster, TopicRevocations, err))
	}
	c.undo = append(c.undo, unsub)
	c.undo = append(c.undo, auth.Subscribe(func(r capability.Revocation) {
		c.publish(TopicRevocations, capability.RevocationsProto([]capability.Revocation{r}), n.opts.Logger)
	}))
	// At every topology change: a member that joined missed what was
	// revoked before, so every node sends its whole list again (at once
	// when a member joined, and at every change once it settled); and
	// pub-sub messages may have been lost (the topic actor moves, the
	// subscriptions are renewed), so this node pulls.
	sub := m.System().EventStream.Subscribe(func(evt any) {
		t, ok := evt.(*pcluster.ClusterTopology)
		if !ok {
			return
		}
		if len(t.Joined) > 0 {
			if all := auth.Revoked(); len(all) > 0 {
				c.publish(TopicRevocations, capability.RevocationsProto(all), n.opts.Logger)
			}
		}
		if len(t.Joined) > 0 || len(t.Left) > 0 {
			// Now, and once more when the subscriptions have been renewed
			// (the cluster package renews them within a second): what was
			// published while the topic moved is pulled by the second.
			c.wg.Go(func() {
				n.catchUp(c, "after a topology change")
				select {
				case <-c.ctx.Done():
				case <-time.After(catchUpAgain):
					n.catchUp(c, "after a topology change settled")
					// Revocations published while the topic moved may
					// be lost, and a member that joined may have
					// subscribed after the list above was sent: the
					// whole list again, once the subscriptions are
					// renewed.
					if all := auth.Revoked(); len(all) > 0 {
						c.publish(TopicRevocations, capability.RevocationsProto(all), n.opts.Logger)
					}
				}
			})
		}
	})
	c.undo = append(c.undo, func() { m.System().EventStream.Unsubscribe(sub) })
	if all := auth.Revoked(); len(all) > 0 {
		c.publish(TopicRevocations, capability.RevocationsProto(all), n.opts.Logger)
	}
	n.cl = c
	return m, nil
}

// catchUpAgain is how long after a topology change the node pulls again:
// past the cluster package's renewal of its subscriptions.
const catchUpAgain = 3 * time.Second

// catchUp pulls from the upstream once (why: for the log).
func (n *Node) catchUp(c *clustered, why string) {
	if _, err := n.gitClient.Pull(c.ctx); err != nil && c.ctx.Err() == nil && !errors.Is(err, gitclient.ErrNoRepo) {
		n.opts.Logger.Warn("cluster: pulling from the upstream "+why, slog.Any("err", err))
	}
}

// pullMissing is the last resort of a read or run of a tool this node does
// not have: in a cluster, another node may have written it and its
// announcement may have been lost; the node pulls once and reports whether
// it should try again.
func (n *Node) pullMissing(ctx context.Context) bool {
	c := n.cluster()
	if c == nil {
		return false
	}
	s, err := n.gitClient.Pull(ctx)
	return err == nil && len(s.Changed) > 0
}

// PeerKernel is the client of the kernel actor of the member at address
// (another node of the cluster). Its requests carry this node's own token
// (kernel.NodeToken, verified there with the cluster's key): enough for
// what one node asks another's kernel (ps, events, charging a caller of
// that node), never for a process-table change. Outside a cluster the
// token is empty and that node refuses every request.
func (n *Node) PeerKernel(address string) kernelclient.Client {
	k := n.KernelClient()
	k.PID = actor.NewPID(address, k.PID.Id)
	if c := n.cluster(); c != nil {
		k.Token = c.token
	}
	return k
}

// LeaveCluster leaves the node's cluster (nothing when it is in none): its
// forges' activations move to the other members, and the node goes on
// alone.
func (n *Node) LeaveCluster(ctx context.Context) error {
	n.clusterMu.Lock()
	c := n.cl
	n.cl = nil
	n.clusterMu.Unlock()
	if c == nil {
		return nil
	}
	return c.close(ctx)
}

// Member is the node's cluster membership (nil when it is in none).
func (n *Node) Member() *cluster.Member {
	if c := n.cluster(); c != nil {
		return c.m
	}
	return nil
}

func (n *Node) cluster() *clustered {
	n.clusterMu.Lock()
	defer n.clusterMu.Unlock()
	return n.cl
}

func (c *clustered) close(ctx context.Context) error {
	for i := len(c.undo) - 1; i >= 0; i-- {
		c.undo[i]()
	}
	c.cancel()
	c.wg.Wait()
	return c.m.Leave(ctx)
}

// publish sends msg on topic from a goroutine of its own: the callers are
// an actor's Receive or the Authority's revoking goroutine, which MUST NOT
// block.
func (c *clustered) publish(topic string, msg proto.Message, log *slog.Logger) {
	c.wg.Go(func() {
		ctx, cancel := context.WithTimeout(c.ctx, publishTimeout)
		defer cancel()
		if err := c.m.Publish(ctx, topic, msg); err != nil && c.ctx.Err() == nil {
			log.Warn("cluster: publishing failed", slog.String("topic", topic), slog.Any("err", err))
		}
	})
}

// onCommitted is the git actor's OnCommitted: a commit this node pushed is
// published for the other nodes.
func (n *Node) onCommitted(cm *gitpb.Committed) {
	if c := n.cluster(); c != nil {
		c.publish(TopicTools, cm, n.opts.Logger)
	}
}

// onAnnounced takes a commit some node (this one included) published: the
// git actor pulls until the tool root includes it, and until then every
// read or run of a tool here waits (syncTools).
func (n *Node) onAnnounced(c *clustered, cm *gitpb.Committed) {
	commit := cm.GetCommit()
	if commit == "" {
		return
	}
	c.mu.Lock()
	c.pending[commit] = true
	c.mu.Unlock()
	c.wg.Go(func() {
		defer func() { c.mu.Lock(); delete(c.pending, commit); c.mu.Unlock() }()
		if _, err := n.gitClient.Announce(c.ctx, commit, cm.GetBranch()); err != nil && c.ctx.Err() == nil {
			n.opts.Logger.Warn("cluster: a commit another node pushed did not reach this tool root", slog.String("commit", commit), slog.Any("err", err))
		}
	})
}

// syncTools is the barrier before a tool is read or run: it returns once
// the tool root includes every commit announced so far (at once when the
// node is in no cluster, or has nothing pending).
func (n *Node) syncTools(ctx context.Context) error {
	c := n.cluster()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	commits := make([]string, 0, len(c.pending))
	for k := range c.pending {
		commits = append(commits, k)
	}
	c.mu.Unlock()
	for _, commit := range commits {
		if _, err := n.gitClient.WaitFor(ctx, commit, 0); err != nil {
			return fmt.Errorf("the tool root is not up to date with the cluster (commit %s another node pushed): %w", commit, err)
		}
	}
	return nil
}

// forgeFor reuses or forges a tool for spec on behalf of caller: through
// the spec's grain, wherever the cluster placed it, when the node is in a
// cluster; through the local forge actor otherwise.
func (n *Node) forgeFor(ctx context.Context, spec string, caller *execclient.Caller) (forge.Result, error) {
	c := n.cluster()
	if c == nil {
		return n.forgeClient.Forge(ctx, spec, caller)
	}
	if caller != nil {
		home := *caller
		home.Home = c.m.Address()
		caller = &home
	}
	g := forge.GrainClient{
		Request: func(ctx context.Context, id string, msg proto.Message) (proto.Message, error) {
			// Request, re-sent every RequestTimeout while the forge runs
			// and after the grain's node died: the grain joins a re-sent
			// Run to its waiter (one per request key), answers it the
			// outcome it already sent (an answer that reached an attempt
			// already given up), and a new activation answers it from the
			// journal (Finished, Failed): the caller gets its forge's true
			// outcome however long it runs and wherever it ends.
			return c.m.Request(ctx, forge.GrainKind, id, msg)
		},
		Tell: func(id string, msg proto.Message) { c.m.Send(forge.GrainKind, id, msg) },
	}
	res, err := g.Forge(ctx, spec, caller)
	if err == nil && res.Commit != "" {
		// The grain may have run elsewhere: this node's tree includes the
		// tool before forge_tool answers.
		if _, err := n.gitClient.Announce(ctx, res.Commit, ""); err != nil {
			return res, fmt.Errorf("forge_tool: the tool was forged as %s (commit %s) but did not reach this node's tool root: %w", res.Path, res.Commit, err)
		}
	}
	return res, err
}

// pendingForge is the forge grain's Pending: the unfinished forge run of
// the spec whose hash is specHash, claimed for this node. A run another
// node still holds (its lease has not lapsed: it is alive, or died less
// than a lease ago) is waited for until its lease lapses, then claimed,
// within ctx: the forge of a dead node is resumed, never forged again (a
// live node that goes on renewing keeps it, and the wait ends with ctx).
func (n *Node) pendingForge(ctx context.Context, specHash string) (string, bool, error) {
	j := n.opts.Journal
	if j == nil {
		return "", false, nil
	}
	for {
		// Runs, not Unfinished: a run another node holds is listed too,
		// to wait for its lease.
		runs, err := forgeRuns(j, specHash, journal.StatusRunning)
		if err != nil {
			return "", false, err
		}
		var wait time.Duration
		for _, r := range runs {
			ok, err := j.Claim(r.ID, j.Owner(), 0)
			if err != nil {
				// journal.ErrEnded: its holder finished it meanwhile: the
				// grain looks for the finished forge again.
				return "", false, err
			}
			if ok {
				return r.ID, true, nil
			}
			if d := time.Until(r.LeaseUntil); wait == 0 || d < wait {
				wait = max(d, 10*time.Millisecond)
			}
		}
		if wait == 0 {
			return "", false, nil
		}
		n.opts.Logger.Info("forge grain: the spec's unfinished forge is held by another node; waiting for its lease to lapse", slog.Duration("wait", wait))
		t := time.NewTimer(wait + 50*time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", false, ctx.Err()
		case <-t.C:
		}
	}
}

// finishedForge is the forge grain's Finished: the newest forge run of the
// spec that ended ok and whose tool this node's tool root has (pulled to
// the run's commit first).
func (n *Node) finishedForge(ctx context.Context, specHash string) (forge.Result, string, bool, error) {
	j := n.opts.Journal
	if j == nil {
		return forge.Result{}, "", false, nil
	}
	runs, err := forgeRuns(j, specHash, journal.StatusOK)
	if err != nil {
		return forge.Result{}, "", false, err
	}
	for i := len(runs) - 1; i >= 0; i-- { // newest first
		r := runs[i]
		var res forge.Result
		if json.Unmarshal(r.Result, &res) != nil || res.Path == "" {
			continue
		}
		if res.Commit != "" {
			if _, err := n.gitClient.Announce(ctx, res.Commit, ""); err != nil {
				return forge.Result{}, "", false, fmt.Errorf("the tool %s forged for this spec (commit %s) did not reach this node: %w", res.Path, res.Commit, err)
			}
		}
		if _, err := n.opts.Jail.Stat(res.Path); err != nil {
			continue // removed since: forge it again
		}
		res.RunID = r.ID
		return res, forgerun.RequestOf(r), true, nil
	}
	return forge.Result{}, "", false, nil
}

// failedForge is the forge grain's Failed: the failure of the spec's forge
// run that the request whose key is request caused, if it ended failed.
func (n *Node) failedForge(_ context.Context, specHash, request string) (error, bool, error) {
	j := n.opts.Journal
	if j == nil {
		return nil, false, nil
	}
	runs, err := forgeRuns(j, specHash, journal.StatusFailed)
	if err != nil {
		return nil, false, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if forgerun.RequestOf(runs[i]) == request {
			return forge.FailureOf(runs[i]), true, nil
		}
	}
	return nil, false, nil
}

// forgeRuns are the journal's forge runs of the spec whose hash is
// specHash in status, oldest first.
func forgeRuns(j *journal.Journal, specHash, status string) ([]journal.RunMeta, error) {
	runs, err := j.Runs()
	var out []journal.RunMeta
	for _, r := range runs {
		if spec, ok := forgerun.SpecOf(r); ok && r.Status == status && forge.SpecHash(spec) == specHash {
			out = append(out, r)
		}
	}
	return out, err
}

// ErrCluster: the node could not join or use its cluster; the message
// says why.
var ErrCluster = errors.New("node: cluster")
