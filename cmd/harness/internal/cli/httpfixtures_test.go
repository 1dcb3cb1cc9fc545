package cli_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// exampleToken is the bearer token of the help examples' token file, whose
// subject is "alice".
const exampleToken = "example-token-of-alice"

// writeHTTPFixtures writes, in dir, what serve's HTTP examples name: a
// token file (alice's token), a principals file (alice owns dir) and a
// self-signed certificate for 127.0.0.1 with its key; it returns the pool
// that trusts the certificate.
func writeHTTPFixtures(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	sum := sha256.Sum256([]byte(exampleToken))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokens"), []byte("# subject sha256:hex\nalice sha256:"+hex.EncodeToString(sum[:])+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "principals.yaml"), []byte("principals:\n  alice:\n    workspaces: ["+dir+"]\n    mode: workspace-write\n"), 0o600))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "harness test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}
