package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// MemberServerName is the DNS name every member certificate carries (a
// subject alternative name) and every member verifies when it dials
// another: members are told apart by their CA, not by their host names,
// so a member reached through NAT or a container address is verified all
// the same. IMPORTANT: a certificate made by another tool than 'agentos
// cluster certs' MUST carry this DNS name and both the server and client
// extended key usages.
const MemberServerName = "agentos-cluster-member"

// TLS is the mutual TLS of a member: the files of its certificate, its key
// and the cluster's CA certificate (PEM). A member presents its
// certificate to every member it dials and requires one signed by the CA
// from every member that dials it, on the remote (gRPC) and on the seeds
// provider's health endpoint; the etcd client presents it too when the
// etcd endpoints are https. Holding a certificate signed by the CA is
// what makes a process a member: one without is never listed, never
// placed a grain, and cannot deliver a message.
type TLS struct {
	CertFile string
	KeyFile  string
	CAFile   string
}

// enabled reports whether any file is set (then all MUST be).
func (t TLS) enabled() bool { return t.CertFile != "" || t.KeyFile != "" || t.CAFile != "" }

// tlsConfigs are a member's TLS settings, loaded from its files.
type tlsConfigs struct {
	server *tls.Config // remote and health endpoint: a CA-signed client certificate required
	client *tls.Config // dialing members: the server MUST be CA-signed and named MemberServerName
	etcd   *tls.Config // dialing etcd over https: the CA, the member's certificate, etcd's host name
}

// load reads the files, or returns an error wrapping ErrOptions that says
// which file is wrong and what to do.
func (t TLS) load() (*tlsConfigs, error) {
	if t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" {
		return nil, fmt.Errorf("%w: TLS needs the member's certificate, its key and the cluster's CA certificate (got cert %q, key %q, CA %q): 'agentos cluster certs' makes them", ErrOptions, t.CertFile, t.KeyFile, t.CAFile)
	}
	pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: the member's certificate %s and key %s: %v", ErrOptions, t.CertFile, t.KeyFile, err)
	}
	caPEM, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("%w: the cluster's CA certificate: %v", ErrOptions, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate: give the cluster's CA certificate (ca.crt of 'agentos cluster certs')", ErrOptions, t.CAFile)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrOptions, t.CertFile, err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: MemberServerName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("%w: the member's certificate %s does not verify against the CA %s as a member certificate (%v): make it with 'agentos cluster certs' from this CA", ErrOptions, t.CertFile, t.CAFile, err)
	}
	return &tlsConfigs{
		server: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool},
		client: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair},
			RootCAs: pool, ServerName: MemberServerName},
		etcd: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, RootCAs: pool},
	}, nil
}

// grpcOptions are the remote's server and dial options for c.
func (c *tlsConfigs) grpcOptions() ([]grpc.ServerOption, []grpc.DialOption) {
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(c.server))},
		[]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(c.client))}
}

// dialTLS dials addr and completes a TLS handshake as a member (the
// seeds provider's HTTP client dials the health endpoints with it).
func (c *tlsConfigs) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Second}, Config: c.client}
	return d.DialContext(ctx, network, addr)
}

// checkPlaintext returns nil when a member without TLS may start: the
// caller said so (InsecureLoopback) and every address it binds, advertises
// or reaches is a loopback one; otherwise an error wrapping ErrOptions
// naming the address and what to do.
func (o Options) checkPlaintext() error {
	if !o.InsecureLoopback {
		return fmt.Errorf("%w: no TLS certificate: a member talks to the others over mutual TLS; give Options.TLS (agentos.json: cluster.cert, cluster.key, cluster.ca; 'agentos cluster certs' makes them), "+
			"or, for a cluster whose every member runs on this machine's loopback, set InsecureLoopback (cluster.insecure_loopback: true)", ErrOptions)
	}
	addrs := []string{o.Host}
	if o.AdvertisedAddress != "" {
		addrs = append(addrs, hostOf(o.AdvertisedAddress))
	}
	for _, s := range o.Seeds {
		addrs = append(addrs, hostOf(s))
	}
	for _, e := range o.Etcd.Endpoints {
		addrs = append(addrs, hostOf(e))
	}
	for _, a := range addrs {
		if !isLoopback(a) {
			return fmt.Errorf("%w: plaintext (InsecureLoopback, cluster.insecure_loopback) is refused: %q is not a loopback address, so the cluster's messages would cross a network unauthenticated; "+
				"give the member a certificate (cluster.cert, cluster.key, cluster.ca; 'agentos cluster certs' makes them)", ErrOptions, a)
		}
	}
	return nil
}

// hostOf is the host of a host:port or of a URL (s itself when neither).
func hostOf(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil {
			return u.Hostname()
		}
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}

// isLoopback reports whether host is "localhost" or a loopback IP
// ("" and 0.0.0.0, every interface, are not).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isTLSRefusal reports whether err is a failed handshake (a certificate
// refused on either side), not an unreachable address.
func isTLSRefusal(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		alert    tls.AlertError
		record   tls.RecordHeaderError
		verify   *tls.CertificateVerificationError
	)
	return errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname) ||
		errors.As(err, &alert) || errors.As(err, &record) || errors.As(err, &verify)
}
