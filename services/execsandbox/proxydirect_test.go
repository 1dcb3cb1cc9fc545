package execsandbox_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// noProxyEnv unsets every proxy variable: the program after it is one
// that ignores them (Node 20's fetch, ssh, most Go and Python programs).
const noProxyEnv = "unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY; "

// TestDirectHosts (issue 36): a program that ignores the proxy variables
// reaches a host listed with --allow-domain by its name and port: the name
// resolves, through the command's /etc/hosts, to an address of the
// command's own namespace, where the proxy's listener tunnels to the host
// once judged. Node's fetch, curl told to use no proxy and a raw perl
// socket each reach the host's server; a name not listed does not
// resolve and nothing reaches the server; the host's /etc/hosts is
// untouched; the host's own names still resolve in the command.
func TestDirectHosts(t *testing.T) {
	pl := fixtures.Perl(t)
	hostsBefore, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Skip("the machine has no /etc/hosts for the command's to stand over")
	}
	port, hits := fixtures.HTTPServer(t)
	sshPort, banners := sshBanner(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, hexec.Config{}, nil)
			w = withRunner(t, w, execsandbox.Config{
				AllowDomains: []string{"allowed.test:" + strconv.Itoa(port), "allowed.test:" + strconv.Itoa(sshPort)},
				Resolver:     fixtures.LoopbackResolver{"allowed.test", "refused.test"},
			})
			want := fmt.Sprintf("hello from the host to allowed.test:%d\n", port)
			clients := map[string]string{
				"perl": fmt.Sprintf(`%s -MIO::Socket::INET -e '$c = IO::Socket::INET->new(PeerAddr => "allowed.test", PeerPort => %d) or die "connect: $@\n"; `+
					`print $c "GET / HTTP/1.0\r\nHost: allowed.test:%d\r\n\r\n"; while (<$c>) { $b = $_ } print $b'`, pl, port, port),
			}
			if curl, err := exec.LookPath("curl"); err == nil {
				clients["curl"] = fmt.Sprintf("%s -sS -f --noproxy '*' http://allowed.test:%d/", curl, port)
			}
			if node, err := exec.LookPath("node"); err == nil {
				clients["node"] = fmt.Sprintf(`%s -e 'fetch("http://allowed.test:%d/").then(r => r.text()).then(t => process.stdout.write(t), e => { console.error(e.cause || e); process.exit(1) })'`, node, port)
			}
			for name, command := range clients {
				t.Run(name, func(t *testing.T) {
					before := hits.Load()
					res := w.run(t, sandbox.WorkspaceWrite, noProxyEnv+command)
					require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
					assert.Equal(t, want, res.Stdout.Text)
					assert.Equal(t, before+1, hits.Load())
					assert.Empty(t, res.Confinement.Refused)
				})
			}
			if ssh, err := exec.LookPath("ssh"); err == nil {
				t.Run("ssh", func(t *testing.T) {
					res := w.run(t, sandbox.WorkspaceWrite, fmt.Sprintf("%s -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p %d git@allowed.test true", ssh, sshPort))
					assert.NotContains(t, res.Stderr.Text, "Could not resolve hostname")
					select {
					case b := <-banners:
						assert.Contains(t, b, "SSH-2.0-", "ssh spoke to the allowed host's server")
					case <-time.After(30 * time.Second):
						t.Fatalf("ssh did not reach the allowed host: %s", res.Stderr.Text)
					}
				})
			}
			t.Run("a host allowed once", func(t *testing.T) {
				res, err := w.r.Run(t.Context(), hexec.Request{
					Command: "getent hosts granted.test", Workdir: w.ws, Timeout: time.Minute,
					Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws), AllowHosts: []string{"granted.test"},
				})
				require.NoError(t, err)
				assert.Regexp(t, `^127\.77\.0\.\d+\s+granted\.test\n$`, res.Stdout.Text, res.Stderr.Text)
				res = w.run(t, sandbox.WorkspaceWrite, "getent hosts granted.test || echo unresolved")
				assert.Equal(t, "unresolved\n", res.Stdout.Text, "a later command was not allowed it")
			})
			t.Run("a name not listed", func(t *testing.T) {
				before := hits.Load()
				res := w.run(t, sandbox.WorkspaceWrite, noProxyEnv+fmt.Sprintf("getent hosts refused.test || echo unresolved; "+
					`%s -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => "refused.test", PeerPort => %d) or print "refused\n"'`, pl, port))
				assert.Equal(t, "unresolved\nrefused\n", res.Stdout.Text, res.Stderr.Text)
				assert.Equal(t, before, hits.Load())
			})
			t.Run("the host's names", func(t *testing.T) {
				res := w.run(t, sandbox.WorkspaceWrite, "getent hosts localhost")
				assert.Equal(t, 0, res.ExitCode, res.Stderr.Text)
				assert.Contains(t, res.Stdout.Text, "localhost")
			})
		})
	}
	hostsAfter, err := os.ReadFile("/etc/hosts")
	require.NoError(t, err)
	assert.Equal(t, string(hostsBefore), string(hostsAfter))
}

// sshBanner is a TCP server on the host's 127.0.0.1 that sends an SSH
// server's banner and passes on the first line each client sends (an SSH
// client's own banner); it returns its port.
func sshBanner(t *testing.T) (int, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	got := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Write([]byte("SSH-2.0-harness-test\r\n"))
			buf := make([]byte, 256)
			n, _ := c.Read(buf)
			_ = c.Close()
			select {
			case got <- string(buf[:n]):
			default:
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, got
}
