package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/admin"
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
	opts := cc.Options(rt.root)
	opts.Logger = rt.log
	m, err := rt.node.JoinCluster(ctx, opts)
	if err != nil {
		return fmt.Errorf("agentos: joining the cluster %q: %w", orDefault(cc.Name, cluster.DefaultName), err)
	}
	if err := m.ServeStatus(map[string]string{"root": rt.root, "pid": strconv.Itoa(os.Getpid()), "version": NodeVersion()}); err != nil {
		return err
	}
	rt.log.Info("agentos: joined the cluster", slog.String("cluster", orDefault(cc.Name, cluster.DefaultName)), slog.String("address", m.Address()), slog.String("provider", orDefault(cc.Provider, cluster.ProviderSeeds)))
	return nil
}

// Member is the node's cluster membership (nil when it is alone).
func (rt *Runtime) Member() *cluster.Member { return rt.node.Member() }

// ClusterReport is what 'agentos cluster status' shows: the cluster as the
// answering node sees it, and what every member holds.
type ClusterReport struct {
	// Cluster is the cluster's name; Self the answering node's address.
	Cluster string `json:"cluster"`
	Self    string `json:"self"`
	// Members are the members the answering node sees alive, each as it
	// answered for itself, sorted by address.
	Members []ClusterMember `json:"members"`
	// Left are the members the answering node saw leave or die.
	Left []string `json:"left,omitempty"`
}

// ClusterMember is one member of a ClusterReport.
type ClusterMember struct {
	ID      string   `json:"id"`
	Address string   `json:"address"`
	Kinds   []string `json:"kinds"`
	// Root and PID are the member's tool root and OS process id.
	Root string `json:"root,omitempty"`
	PID  string `json:"pid,omitempty"`
	// Version is the member's NodeVersion ("" for a member older than
	// this field): members of different versions side by side are a
	// rolling upgrade in progress.
	Version string `json:"version,omitempty"`
	// Forges are the specs (their forge.SpecHash) whose forge grain the
	// member holds.
	Forges []string `json:"forges"`
	// Activations are all the grain activations it holds, as kind/identity.
	Activations []string `json:"activations"`
	// Error is why the member did not answer ("" when it did).
	Error string `json:"error,omitempty"`
}

// ClusterReport asks every member of the node's cluster for its status
// (see cluster.Member.ClusterStatus). It fails with ErrNotClustered when
// the node is alone.
func (rt *Runtime) ClusterReport(ctx context.Context) (ClusterReport, error) {
	m := rt.Member()
	if m == nil {
		return ClusterReport{}, ErrNotClustered
	}
	rep := ClusterReport{Cluster: orDefault(rt.cfg.Cluster.Name, cluster.DefaultName), Self: m.Address(), Members: []ClusterMember{}}
	for _, info := range m.Status().Members {
		if !info.Alive {
			rep.Left = append(rep.Left, info.Address)
		}
	}
	for _, s := range m.ClusterStatus(ctx) {
		cm := ClusterMember{ID: s.Self, Address: s.Address, Kinds: []string{}, Root: s.Labels["root"], PID: s.Labels["pid"], Version: s.Labels["version"], Forges: []string{}, Activations: []string{}, Error: s.Err}
		for _, mi := range s.Members {
			if mi.Address == s.Address {
				cm.Kinds = append(cm.Kinds, mi.Kinds...)
			}
		}
		for _, a := range s.Activations {
			cm.Activations = append(cm.Activations, a.Kind+"/"+a.Identity)
			if a.Kind == forge.GrainKind {
				cm.Forges = append(cm.Forges, a.Identity)
			}
		}
		rep.Members = append(rep.Members, cm)
	}
	return rep, nil
}

// ErrNotClustered: the node is in no cluster.
var ErrNotClustered = errors.New("agentos: this node is in no cluster: start it with 'agentos serve --cluster' (see docs/CLUSTER.md)")

// Cluster implements admin.Backend.
func (b adminBackend) Cluster(ctx context.Context) (any, error) {
	rep, err := b.rt.ClusterReport(ctx)
	if errors.Is(err, ErrNotClustered) {
		return nil, &admin.StatusError{Code: http.StatusNotFound, Err: err}
	}
	return rep, err
}

// Kernels implements admin.Backend: the kernel actor of every member seen
// alive (the same actor id on every node), this node's own included.
func (b adminBackend) Kernels() []admin.NodeKernel {
	m := b.rt.Member()
	if m == nil {
		return nil
	}
	local := b.rt.node.KernelClient()
	var out []admin.NodeKernel
	for _, info := range m.Status().Alive() {
		k := local
		if info.Address != m.Address() {
			k = b.rt.node.PeerKernel(info.Address)
		}
		out = append(out, admin.NodeKernel{Node: info.Address, Kernel: k})
	}
	return out
}

// NodeVersion is the version of the agentos build running this process,
// from its build information: the module version, or for a build from a
// work tree "devel+" and the commit (with "-dirty" for local changes).
func NodeVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		return "devel+" + rev + dirty
	}
	if v == "" {
		return "(devel)"
	}
	return v
}

// keyOutsideTree refuses a private key inside the tool root's Git tree:
// the node commits the files of its tree to the shared upstream, so every
// node and every reader of the upstream would get the key. Under .agentos/
// (never committed) or outside the root is fine.
func keyOutsideTree(root, key string) error {
	if key == "" {
		return nil
	}
	rel, err := filepath.Rel(root, key)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	if rel == StateDir || strings.HasPrefix(rel, StateDir+string(filepath.Separator)) {
		return nil
	}
	return fmt.Errorf("agentos: cluster.key %s is inside the tool root, whose files are committed to the Git upstream: move it out of the root (e.g. /etc/agentos/tls/) or under %s/, and give its absolute path", key, StateDir)
}
