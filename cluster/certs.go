package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/agentos-run/agentos/internal/lazyre"
)

// The files MakeCA and MakeMemberCert write in their directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// memberName is what a member certificate's name may be (its files are
// <name>.crt and <name>.key).
var memberName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// MakeCA makes the cluster's CA in dir (ca.crt, and ca.key readable by its
// owner only), valid for validity, unless dir already holds one: then it
// is loaded and made is false. IMPORTANT: ca.key signs members: whoever
// holds it can add a member to the cluster. Keep it off the nodes.
func MakeCA(dir, cluster string, validity time.Duration) (made bool, err error) {
	if _, err := loadCA(dir); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return false, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "agentos cluster CA " + cluster, Organization: []string{"agentos"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	if err := writeKey(filepath.Join(dir, CAKeyFile), key); err != nil {
		return false, err
	}
	return true, writePEM(filepath.Join(dir, CACertFile), "CERTIFICATE", der, 0o644)
}

// MakeMemberCert makes a member certificate signed by dir's CA (MakeCA):
// dir/<name>.crt and dir/<name>.key (owner-only), valid for validity, for
// the member named name reachable at hosts (IP addresses or DNS names,
// added to MemberServerName as subject alternative names). It refuses to
// overwrite an existing certificate of that name. It returns the paths.
func MakeMemberCert(dir, name string, hosts []string, validity time.Duration) (certPath, keyPath string, err error) {
	if !memberName().MatchString(name) || name == "ca" {
		return "", "", fmt.Errorf("cluster: member name %q: use letters, digits, '.', '_' or '-' (not \"ca\")", name)
	}
	ca, err := loadCA(dir)
	if err != nil {
		return "", "", fmt.Errorf("cluster: the CA in %s: %w (make it first: 'agentos cluster certs --dir %s')", dir, err, dir)
	}
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", fmt.Errorf("cluster: %s exists: a member certificate is never overwritten; remove it first, or pick another name", p)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"agentos"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{MemberServerName},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", err
	}
	if err := writeKey(keyPath, key); err != nil {
		return "", "", err
	}
	return certPath, keyPath, writePEM(certPath, "CERTIFICATE", der, 0o644)
}

type caPair struct {
	cert *x509.Certificate
	key  any
}

// loadCA reads dir's CA (an error wrapping fs.ErrNotExist when there is
// none).
func loadCA(dir string) (caPair, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return caPair{}, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return caPair{}, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return caPair{}, fmt.Errorf("%s or %s is not PEM", CACertFile, CAKeyFile)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return caPair{}, err
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return caPair{}, err
	}
	return caPair{cert: cert, key: key}, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

// writePEM writes one PEM block to a new file (never over an existing one).
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: typ, Bytes: der}); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}
