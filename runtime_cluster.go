package agentos

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agentos-run/agentos/cluster"
)

// joinCluster makes the node a member of cfg.Cluster when it is enabled:
// forges become one grain per spec in the whole cluster, tool commits and
// capability revocations travel between the nodes (see node.JoinCluster).
// A clustered node MUST have the cluster's capability signing key.
func (rt *Runtime) joinCluster(ctx context.Context) error {
	cc := rt.cfg.Cluster
	if !cc.Enabled {
		return nil
	}
	if _, err := rt.cfg.ClusterCapabilityKey(); err != nil {
		return err
	}
	if rt.cfg.Git.Upstream == "" {
		return fmt.Errorf("agentos: a clustered node needs a shared Git upstream (git.upstream in %s): the upstream is the cluster's tool memory, every node's tools come from it", ConfigFile)
	}
	if !rt.j.Shared() {
		rt.log.Warn("agentos: this clustered node journals to a local file: a forge it runs is resumed only by this node after a restart, never by another node; set journal.postgres_dsn_env for a journal the cluster shares (docs/CLUSTER.md)")
	}
	opts := cc.clusterOptions()
	opts.Logger = rt.log
	m, err := rt.node.JoinCluster(ctx, opts)
	if err != nil {
		return fmt.Errorf("agentos: joining the cluster %q: %w", orDefault(cc.Name, cluster.DefaultName), err)
	}
	rt.log.Info("agentos: joined the cluster", slog.String("cluster", orDefault(cc.Name, cluster.DefaultName)), slog.String("address", m.Address()), slog.String("provider", orDefault(cc.Provider, cluster.ProviderSeeds)))
	return nil
}

// Member is the node's cluster membership (nil when it is alone).
func (rt *Runtime) Member() *cluster.Member { return rt.node.Member() }
