package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/agentos-run/agentos/actors/system"
)

// The membership providers Options.Provider names.
const (
	// ProviderSeeds is the seed-list provider (seeds.go, compatible with
	// protoactor's automanaged): every member serves a small HTTP health
	// endpoint and polls the endpoints listed in Options.Seeds. No
	// external service; for development, tests and a fixed set of nodes.
	ProviderSeeds = "seeds"
	// ProviderEtcd is the etcd provider (etcdmembers.go): every member registers
	// itself under a lease in etcd and watches the others. For production.
	ProviderEtcd = "etcd"
)

// Defaults used for zero fields of Options.
const (
	DefaultName            = "agentos"
	DefaultHost            = "127.0.0.1"
	DefaultRefreshInterval = 500 * time.Millisecond
	DefaultRequestTimeout  = 2 * time.Second
	DefaultEtcdPrefix      = "/agentos"
	DefaultEtcdDialTimeout = 5 * time.Second
)

// Kind is a cluster kind (a grain type) a member hosts: protoactor
// activates at most one actor per (kind, identity) in the cluster, on the
// member the identity hashes to among the members hosting the kind.
type Kind struct {
	// Name is the kind's name; every member hosting it MUST give it the
	// same Props behaviour.
	Name string
	// Props builds one activation. Inside, cluster.GetClusterIdentity
	// (protoactor's) gives the activation's identity once it has started.
	Props *actor.Props
}

// EtcdOptions configures the etcd provider.
type EtcdOptions struct {
	// Endpoints are the etcd client URLs ("http://127.0.0.1:2379").
	// Required for ProviderEtcd.
	Endpoints []string
	// Prefix is the key prefix members register under (DefaultEtcdPrefix
	// when empty); members register at Prefix/<cluster name>/<member id>.
	Prefix string
	// DialTimeout bounds the first contact with etcd at Join
	// (DefaultEtcdDialTimeout when zero).
	DialTimeout time.Duration
}

// Options configures Join. The zero value joins (alone) a "seeds" cluster
// named "agentos" on 127.0.0.1, on free ports.
type Options struct {
	// Name is the cluster's name (DefaultName when empty): members with
	// different names never see each other.
	Name string

	// Host and Port are where the member's protoactor remote (gRPC)
	// listens. Host defaults to 127.0.0.1; Port 0 means any free port
	// (Member.Address says which).
	Host string
	Port int
	// AdvertisedAddress is the host:port other members dial, when it is
	// not Host:Port (behind NAT, in a container). Empty means the bound
	// address.
	AdvertisedAddress string

	// Provider is ProviderSeeds (the default) or ProviderEtcd.
	Provider string

	// Seeds (ProviderSeeds) are the host:port health endpoints of the
	// cluster's members. IMPORTANT: the seeds provider
	// discovers nothing: a member sees exactly the members whose endpoint
	// is in its Seeds (and itself: its own endpoint is added). List every
	// member in every member's Seeds.
	Seeds []string
	// HealthPort (ProviderSeeds) is the port of this member's health
	// endpoint, on Host (0 means any free port: Member.HealthAddress says
	// which). Ignored when HealthListener is set.
	HealthPort int
	// HealthListener (ProviderSeeds), when set, is the listener the
	// health endpoint serves on (tests reserve every member's port before
	// any joins). The member closes it at Leave.
	HealthListener net.Listener
	// RefreshInterval (ProviderSeeds) is how often the member polls the
	// seeds (DefaultRefreshInterval when zero): a member that died is
	// seen gone within about one interval plus the 2 s HTTP timeout.
	RefreshInterval time.Duration

	// Etcd configures ProviderEtcd.
	Etcd EtcdOptions

	// TLS is the member's mutual TLS (see TLS). IMPORTANT: without it Join
	// refuses to start unless InsecureLoopback is set and every address
	// (Host, AdvertisedAddress, Seeds, Etcd.Endpoints) is a loopback one.
	TLS TLS
	// InsecureLoopback lets a member without TLS start when every address
	// is a loopback one: a cluster of processes on one machine (tests,
	// demos). Ignored when TLS is set.
	InsecureLoopback bool

	// System, when set, is the actor system the member runs on (a node's,
	// whose actors then become reachable from the other members); nil: the
	// member makes its own. IMPORTANT: a given System stays its owner's:
	// Leave stops the member's grains, subscriptions, gossip and remote on
	// it but does not shut it down (its owner does, after Leave).
	System *system.System

	// Kinds are the cluster kinds this member hosts.
	Kinds []Kind

	// RequestTimeout bounds one attempt of Request and Publish
	// (DefaultRequestTimeout when zero); the whole call is bounded by its
	// context.
	RequestTimeout time.Duration

	// Logger receives the member's and protoactor's log lines
	// (slog.Default() when nil), filtered at Level (slog.LevelWarn when
	// nil; see actors/system.Options).
	Logger *slog.Logger
	Level  slog.Leveler
}

// withDefaults returns o with its defaults filled in, or an error wrapping
// ErrOptions.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Host == "" {
		o.Host = DefaultHost
	}
	if o.Provider == "" {
		o.Provider = ProviderSeeds
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Etcd.Prefix == "" {
		o.Etcd.Prefix = DefaultEtcdPrefix
	}
	if o.Etcd.DialTimeout <= 0 {
		o.Etcd.DialTimeout = DefaultEtcdDialTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, o.check()
}

// check validates o, its defaults filled in: the ports, the provider's
// settings, what plaintext needs (checkPlaintext) and the kinds.
func (o Options) check() error {
	if !portOrZero(o.Port) || !portOrZero(o.HealthPort) {
		return fmt.Errorf("%w: Port %d / HealthPort %d out of range: use 0 (any free port) or 1..65535", ErrOptions, o.Port, o.HealthPort)
	}
	if err := o.checkProvider(); err != nil {
		return err
	}
	if !o.TLS.enabled() {
		if err := o.checkPlaintext(); err != nil {
			return err
		}
	}
	return checkKinds(o.Kinds)
}

// checkProvider checks that o.Provider is known and has what it needs:
// seeds that are host:port, or etcd endpoints.
func (o Options) checkProvider() error {
	switch o.Provider {
	case ProviderSeeds:
		for _, s := range o.Seeds {
			if _, _, err := net.SplitHostPort(s); err != nil {
				return fmt.Errorf("%w: seed %q is not host:port (%v): list the members' health endpoints", ErrOptions, s, err)
			}
		}
	case ProviderEtcd:
		if len(o.Etcd.Endpoints) == 0 {
			return fmt.Errorf("%w: provider etcd needs Etcd.Endpoints (e.g. http://127.0.0.1:2379)", ErrOptions)
		}
	default:
		return fmt.Errorf("%w: unknown provider %q: use %q (development) or %q (production)", ErrOptions, o.Provider, ProviderSeeds, ProviderEtcd)
	}
	return nil
}

// checkKinds checks that each kind has a name and Props, and a name of its
// own: not protoactor's topic kind, and not listed twice.
func checkKinds(kinds []Kind) error {
	seen := map[string]bool{}
	for _, k := range kinds {
		if k.Name == "" || k.Props == nil {
			return fmt.Errorf("%w: kind %q needs a name and Props", ErrOptions, k.Name)
		}
		if k.Name == pcluster.TopicActorKind {
			return fmt.Errorf("%w: kind %q is protoactor's pub-sub topic kind: pick another name", ErrOptions, k.Name)
		}
		if seen[k.Name] {
			return fmt.Errorf("%w: kind %q listed twice", ErrOptions, k.Name)
		}
		seen[k.Name] = true
	}
	return nil
}
