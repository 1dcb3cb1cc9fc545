//go:build linux

package execsandbox_test

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestDirectIPLiteral (issue 36): a program that ignores the proxy
// variables reaches an IP literal listed with --allow-domain (a database
// at 10.0.0.5:5432) at that address: the namespace's loopback is given it
// and the proxy's listener there tunnels to the host once judged. Perl's
// raw socket and curl told to use no proxy reach the host's server; a port
// the entry does not name reaches nothing; a command cannot take the
// address away (it holds no capability over its namespace), and the
// report lists the literal with its port.
func TestDirectIPLiteral(t *testing.T) {
	pl := fixtures.Perl(t)
	ip := netip.MustParseAddr(hostAddress(t))
	ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
	require.NoError(t, err)
	hits := new(atomic.Int64)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = fmt.Fprintf(w, "hello from the host to %s\n", r.Host)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	hostPort := netip.AddrPortFrom(ip, uint16(port)).String()

	w := newWorld(t, primaryOwner(), hexec.Config{}, nil)
	w = withRunner(t, w, execsandbox.Config{AllowDomains: []string{hostPort}})
	want := "hello from the host to " + hostPort + "\n"
	perl := func(p int) string {
		return fmt.Sprintf(`%s -MIO::Socket::INET -e '$c = IO::Socket::INET->new(PeerAddr => "%s", PeerPort => %d, Timeout => 5) or die "connect: $@\n"; `+
			`print $c "GET / HTTP/1.0\r\nHost: %s\r\n\r\n"; while (<$c>) { $b = $_ } print $b'`, pl, ip, p, hostPort)
	}
	res := w.run(t, sandbox.WorkspaceWrite, noProxyEnv+perl(port))
	require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
	assert.Equal(t, want, res.Stdout.Text)
	assert.Equal(t, int64(1), hits.Load())
	if curl, err := exec.LookPath("curl"); err == nil {
		res := w.run(t, sandbox.WorkspaceWrite, noProxyEnv+fmt.Sprintf("%s -sS -f --noproxy '*' http://%s/", curl, hostPort))
		require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
		assert.Equal(t, want, res.Stdout.Text)
		assert.Equal(t, int64(2), hits.Load())
	}

	res = w.run(t, sandbox.WorkspaceWrite, noProxyEnv+perl(port+1))
	assert.NotEqual(t, 0, res.ExitCode, "a port the entry does not name: %s", res.Stdout.Text)
	if ipTool, err := exec.LookPath("ip"); err == nil {
		res = w.run(t, sandbox.WorkspaceWrite, ipTool+" addr del "+ip.String()+"/32 dev lo")
		assert.NotEqual(t, 0, res.ExitCode, "a command took the address away: %s", res.Stdout.Text)
	}
	res = w.run(t, sandbox.WorkspaceWrite, noProxyEnv+perl(port))
	assert.Equal(t, want, res.Stdout.Text, res.Stderr.Text)
	assert.Equal(t, want, res.Stdout.Text)
	assert.Contains(t, w.r.Isolation().Direct, ip.String()+":"+strconv.Itoa(port))
}
