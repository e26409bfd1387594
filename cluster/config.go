package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Config is the "cluster" section of agentos.json: how a node joins a cluster of agentos nodes (see
// docs/CLUSTER.md). Every field may be overridden by an environment
// variable (AGENTOS_CLUSTER_<FIELD>, listed with each field) and by the
// flags of 'agentos serve' (--cluster, --cluster-name, --cluster-port,
// --health-port, --seeds, --etcd), in that order of precedence: flags over
// the environment over this file.
type Config struct {
	// Enabled makes the node join the cluster when it starts
	// (AGENTOS_CLUSTER=1, serve --cluster). Default false: the node is
	// alone.
	Enabled bool `json:"enabled,omitempty"`
	// Name is the cluster's name: nodes with another name never see this
	// one (AGENTOS_CLUSTER_NAME). Default "agentos".
	Name string `json:"name,omitempty"`
	// Host and Port are where the node's protoactor remote listens for the
	// other nodes (AGENTOS_CLUSTER_HOST, AGENTOS_CLUSTER_PORT). Default
	// 127.0.0.1 and a free port. IMPORTANT: a node on another machine needs
	// a reachable host here (or AdvertisedAddress).
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// AdvertisedAddress is the host:port the other nodes dial when it is
	// not Host:Port, behind NAT or in a container
	// (AGENTOS_CLUSTER_ADVERTISED_ADDRESS).
	AdvertisedAddress string `json:"advertised_address,omitempty"`
	// Provider is the membership provider: "seeds" (default: our seed-list
	// provider, cluster/seeds.go, no external service; for development and
	// small fixed clusters) or "etcd" (our healing etcd provider; for
	// production) (AGENTOS_CLUSTER_PROVIDER).
	Provider string `json:"provider,omitempty"`
	// Seeds (provider "seeds") are the host:port health endpoints of every
	// node of the cluster, this one included (AGENTOS_CLUSTER_SEEDS,
	// comma-separated). IMPORTANT: a node sees exactly the nodes listed.
	Seeds []string `json:"seeds,omitempty"`
	// HealthPort (provider "seeds") is the port of this node's health
	// endpoint on Host, the one its entry in Seeds names
	// (AGENTOS_CLUSTER_HEALTH_PORT). Default: a free port.
	HealthPort int `json:"health_port,omitempty"`
	// Etcd (provider "etcd") is the etcd cluster members register in.
	Etcd EtcdConfig `json:"etcd,omitzero"`
	// Cert, Key and CA are the PEM files of this node's member certificate,
	// its private key and the cluster's CA certificate
	// (AGENTOS_CLUSTER_CERT, AGENTOS_CLUSTER_KEY, AGENTOS_CLUSTER_CA); a
	// relative path is under the tool root. IMPORTANT: the key MUST be
	// outside the tool root or under .agentos/ (the root's other files are
	// committed to the upstream): Start refuses it elsewhere. The nodes talk over mutual TLS
	// with them: a node without a certificate from the CA is never a member
	// (see TLS). 'agentos cluster certs' makes them.
	Cert string `json:"cert,omitempty"`
	Key  string `json:"key,omitempty"`
	CA   string `json:"ca,omitempty"`
	// InsecureLoopback lets a node without a certificate join a cluster
	// whose every address (host, advertised address, seeds, etcd
	// endpoints) is a loopback one, in plaintext
	// (AGENTOS_CLUSTER_INSECURE_LOOPBACK=1): tests and demos on one
	// machine. IMPORTANT: without certificates and without it, the node
	// refuses to start clustered.
	InsecureLoopback bool `json:"insecure_loopback,omitempty"`
}

// EtcdConfig is the etcd cluster of the "etcd" membership provider.
type EtcdConfig struct {
	// Endpoints are etcd's client URLs, e.g. "http://10.0.0.5:2379"
	// (AGENTOS_CLUSTER_ETCD, comma-separated).
	Endpoints []string `json:"endpoints,omitempty"`
	// Prefix is the key prefix the nodes register under. Default
	// "/agentos".
	Prefix string `json:"prefix,omitempty"`
}

// WithEnv returns c with the AGENTOS_CLUSTER_* environment variables
// applied (see Config's fields), or an error naming the variable
// that is malformed.
func (c Config) WithEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	list := func(name string, dst *[]string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = splitList(v)
		}
	}
	if err := envBool(getenv, "AGENTOS_CLUSTER", &c.Enabled); err != nil {
		return c, err
	}
	str("AGENTOS_CLUSTER_NAME", &c.Name)
	str("AGENTOS_CLUSTER_HOST", &c.Host)
	str("AGENTOS_CLUSTER_ADVERTISED_ADDRESS", &c.AdvertisedAddress)
	str("AGENTOS_CLUSTER_PROVIDER", &c.Provider)
	str("AGENTOS_CLUSTER_CERT", &c.Cert)
	str("AGENTOS_CLUSTER_KEY", &c.Key)
	str("AGENTOS_CLUSTER_CA", &c.CA)
	if err := envBool(getenv, "AGENTOS_CLUSTER_INSECURE_LOOPBACK", &c.InsecureLoopback); err != nil {
		return c, err
	}
	list("AGENTOS_CLUSTER_SEEDS", &c.Seeds)
	list("AGENTOS_CLUSTER_ETCD", &c.Etcd.Endpoints)
	if err := envPort(getenv, "AGENTOS_CLUSTER_PORT", &c.Port); err != nil {
		return c, err
	}
	if err := envPort(getenv, "AGENTOS_CLUSTER_HEALTH_PORT", &c.HealthPort); err != nil {
		return c, err
	}
	return c, nil
}

// validPort reports whether p is a port number from 1 to 65535.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// portOrZero reports whether n is a port number or 0 (a free port).
func portOrZero(n int) bool { return n >= 0 && n <= 65535 }

// Validate checks the section, naming the key that is wrong.
func (c Config) Validate() error {
	if err := c.validateProvider(); err != nil {
		return err
	}
	if !portOrZero(c.Port) || !portOrZero(c.HealthPort) {
		return fmt.Errorf("cluster.port and cluster.health_port must be port numbers (0: a free port)")
	}
	if tls := c.Cert != "" || c.Key != "" || c.CA != ""; tls && (c.Cert == "" || c.Key == "" || c.CA == "") {
		return fmt.Errorf("cluster.cert, cluster.key and cluster.ca go together (got cert %q, key %q, ca %q): give all three ('agentos cluster certs' makes them)", c.Cert, c.Key, c.CA)
	}
	return nil
}

// validateProvider checks that cluster.provider is known and has what it
// needs: seeds that are host:port, or (when the cluster is enabled) etcd
// endpoints.
func (c Config) validateProvider() error {
	switch c.Provider {
	case "", ProviderSeeds:
		for _, s := range c.Seeds {
			if i := strings.LastIndexByte(s, ':'); i <= 0 || !validPort(s[i+1:]) {
				return fmt.Errorf("cluster.seeds: %q is not host:port (the health endpoint of a node: its host and cluster.health_port)", s)
			}
		}
	case ProviderEtcd:
		if c.Enabled && len(c.Etcd.Endpoints) == 0 {
			return fmt.Errorf("cluster.provider is etcd but cluster.etcd.endpoints is empty: list etcd's client URLs (or set AGENTOS_CLUSTER_ETCD)")
		}
	default:
		return fmt.Errorf("cluster.provider %q is not known: use %q (a seed list) or %q", c.Provider, ProviderSeeds, ProviderEtcd)
	}
	return nil
}

// Options are the settings as the member's Options, relative
// certificate paths taken under root.
func (c Config) Options(root string) Options {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	return Options{
		Name: c.Name, Host: c.Host, Port: c.Port, AdvertisedAddress: c.AdvertisedAddress,
		Provider: c.Provider, Seeds: c.Seeds, HealthPort: c.HealthPort,
		Etcd:             EtcdOptions{Endpoints: c.Etcd.Endpoints, Prefix: c.Etcd.Prefix},
		TLS:              TLS{CertFile: abs(c.Cert), KeyFile: abs(c.Key), CAFile: abs(c.CA)},
		InsecureLoopback: c.InsecureLoopback,
	}
}

// envBool sets *dst from the environment variable name when it is set: 1,
// true, yes or on; 0, false, no or off; anything else is an error naming
// the variable.
func envBool(getenv func(string) string, name string, dst *bool) error {
	switch v := strings.TrimSpace(getenv(name)); v {
	case "":
	case "1", "true", "yes", "on":
		*dst = true
	case "0", "false", "no", "off":
		*dst = false
	default:
		return fmt.Errorf("%s=%q: use 1 or 0", name, v)
	}
	return nil
}

// envPort sets *dst from the environment variable name when it is set: a
// port number, or 0 (a free port); anything else is an error naming the
// variable.
func envPort(getenv func(string) string, name string, dst *int) error {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || !portOrZero(n) {
		return fmt.Errorf("%s=%q is not a port number (0 to 65535)", name, v)
	}
	*dst = n
	return nil
}
