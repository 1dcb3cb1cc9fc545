//go:build linux

package execsandbox_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
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
// untouched; the host's own names still resolve in the command. Python's
// urllib and git over http and ssh reach it too, and ssh to a name not
// listed is refused naming it.
func TestDirectHosts(t *testing.T) {
	longTest(t)
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
			if _, err := os.Stat("/usr/bin/python3"); err == nil {
				clients["python"] = fmt.Sprintf(`/usr/bin/python3 -c 'import urllib.request, sys; sys.stdout.write(urllib.request.urlopen("http://allowed.test:%d/", timeout=30).read().decode())'`, port)
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
					spokeSSH(t, banners, "ssh", res)
				})
			}
			if git, err := exec.LookPath("git"); err == nil {
				t.Run("git over http", func(t *testing.T) {
					// The host's server is no git server: what counts is
					// that git's request reached it.
					before := hits.Load()
					res := w.run(t, sandbox.WorkspaceWrite, noProxyEnv+fmt.Sprintf("%s ls-remote http://allowed.test:%d/repo.git", git, port))
					assert.NotContains(t, res.Stderr.Text, "Could not resolve host")
					assert.Greater(t, hits.Load(), before, "git's request did not reach the allowed host: %s", res.Stderr.Text)
				})
				if ssh, err := exec.LookPath("ssh"); err == nil {
					t.Run("git over ssh", func(t *testing.T) {
						res := w.run(t, sandbox.WorkspaceWrite, fmt.Sprintf("GIT_SSH_COMMAND='%s -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null' %s ls-remote ssh://git@allowed.test:%d/repo.git", ssh, git, sshPort))
						spokeSSH(t, banners, "git over ssh", res)
					})
				}
			}
			if ssh, err := exec.LookPath("ssh"); err == nil {
				t.Run("ssh to a name not listed", func(t *testing.T) {
					res := w.run(t, sandbox.WorkspaceWrite, ssh+" -o BatchMode=yes -o ConnectTimeout=20 git@refused.test true")
					assert.NotEqual(t, 0, res.ExitCode)
					require.NotEmpty(t, res.Confinement.Refused, res.Stderr.Text)
					assert.Equal(t, "refused.test", res.Confinement.Refused[0].Host, "the refusal names the host")
					assert.Contains(t, res.Confinement.Refused[0].Reason, "not in --allow-domain")
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

// spokeSSH checks that the command res (what, for messages) resolved the
// allowed host and spoke SSH to its server: the client's banner reached
// sshBanner's banners.
func spokeSSH(t *testing.T, banners <-chan string, what string, res hexec.Result) {
	t.Helper()
	assert.NotContains(t, res.Stderr.Text, "Could not resolve hostname")
	select {
	case b := <-banners:
		assert.Contains(t, b, "SSH-2.0-", "%s spoke to the allowed host's server", what)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not reach the allowed host: %s", what, res.Stderr.Text)
	}
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

// TestDirectNames (issue 36): the namespace's name server answers any name
// the proxy admits, a wildcard's names too, with an address of the
// namespace where the proxy's listener reaches the host (Node's fetch,
// Python's urllib without the proxy variables); a name not admitted gets
// NXDOMAIN at once, and the result names it (the network marker's record,
// its name lookup); the host's server sees nothing of it.
func TestDirectNames(t *testing.T) {
	pl := fixtures.Perl(t)
	port, hits := fixtures.HTTPServer(t)
	w := newWorld(t, primaryOwner(), hexec.Config{}, nil)
	w = withRunner(t, w, execsandbox.Config{
		AllowDomains: []string{"*.allowed.test:" + strconv.Itoa(port)},
		// The wildcard's names resolve, on the host, to a public address
		// the test makes reach the host's loopback: the proxy refuses a
		// wildcard name resolving to a non-public one.
		Resolver: fixtures.LoopbackResolver{"api.allowed.test"},
		Log:      zaptest.NewLogger(t),
	})
	t.Run("a port a command holds", func(t *testing.T) {
		// The command takes the wildcard's port first (before any
		// listener of the session holds it): the name gets no
		// address (never one where the command's socket would answer for
		// the host), and it is no refusal of the host.
		res := w.run(t, sandbox.WorkspaceWrite, noProxyEnv+fmt.Sprintf(
			`%s -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "0.0.0.0:%d", Listen => 1, ReuseAddr => 1) or die "listen: $!\n"; system("getent hosts held.allowed.test || echo unresolved")'`, pl, port))
		assert.Equal(t, "unresolved\n", res.Stdout.Text, res.Stderr.Text)
		assert.Empty(t, res.Confinement.Refused)
	})
	t.Run("a wildcard's name resolves", func(t *testing.T) {
		// getent's ahosts asks with AI_ADDRCONFIG|AI_CANONNAME, which the
		// C library answers from no name server in a namespace with
		// loopback only; hosts, Python's getaddrinfo and Node's lookup ask.
		res := w.run(t, sandbox.WorkspaceWrite, noProxyEnv+"getent hosts api.allowed.test")
		require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
		assert.Regexp(t, `^127\.77\.0\.\d+\s+api\.allowed\.test\n$`, res.Stdout.Text)
	})
	t.Run("the proxy judges the connection", func(t *testing.T) {
		// api.allowed.test resolves to 127.0.0.1 on the host: behind a
		// wildcard, a non-public address is refused when it connects.
		before := hits.Load()
		res := w.run(t, sandbox.WorkspaceWrite, noProxyEnv+fmt.Sprintf(
			`%s -MIO::Socket::INET -e '$c = IO::Socket::INET->new(PeerAddr => "api.allowed.test", PeerPort => %d) or die "connect: $@\n"; print $c "GET / HTTP/1.0\r\n\r\n"; print <$c> // "closed\n"'`, pl, port))
		assert.Equal(t, "closed\n", res.Stdout.Text, res.Stderr.Text)
		assert.Equal(t, before, hits.Load())
		require.Len(t, res.Confinement.Refused, 1)
		assert.Equal(t, "api.allowed.test", res.Confinement.Refused[0].Host)
		assert.Equal(t, port, res.Confinement.Refused[0].Port)
		assert.Contains(t, res.Confinement.Refused[0].Reason, "non-public")
	})
	t.Run("a name not admitted", func(t *testing.T) {
		before := hits.Load()
		start := time.Now()
		cmd := noProxyEnv + "getent hosts evil.example || echo unresolved"
		if node, err := exec.LookPath("node"); err == nil {
			cmd += fmt.Sprintf(`; %s -e 'fetch("http://evil.example/").catch(e => console.log((e.cause || e).code))'`, node)
		}
		res := w.run(t, sandbox.WorkspaceWrite, cmd)
		assert.Less(t, time.Since(start), 30*time.Second)
		assert.Contains(t, res.Stdout.Text, "unresolved\n", res.Stderr.Text)
		if strings.Contains(cmd, "fetch") {
			assert.Contains(t, res.Stdout.Text, "ENOTFOUND")
		}
		assert.Equal(t, before, hits.Load())
		require.NotEmpty(t, res.Confinement.Refused)
		assert.Equal(t, "evil.example", res.Confinement.Refused[0].Host)
		assert.Zero(t, res.Confinement.Refused[0].Port, "refused at its name lookup")
		assert.Contains(t, res.Confinement.Refused[0].Reason, "not in --allow-domain")
	})
}

// TestDirectHostsUnderDenyRead (issue 36): a deny-read pattern naming the
// host's /etc/hosts or /etc/resolv.conf keeps it masked: the command runs
// without its own file there (it failed to start when the file was bound
// over the mask), and reads nothing of the host's.
func TestDirectHostsUnderDenyRead(t *testing.T) {
	for _, p := range []string{"/etc/hosts", "/etc/resolv.conf"} {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			t.Skipf("the machine has no regular %s", p)
		}
	}
	w := newWorldWith(t, primaryOwner(), hexec.Config{}, func(c *sandboxpolicy.Config) {
		c.DenyRead = append(c.DenyRead, "/etc/hosts", "/etc/resolv.conf")
	}, nil)
	w = withRunner(t, w, execsandbox.Config{AllowDomains: []string{"allowed.test"}, Resolver: fixtures.LoopbackResolver{"allowed.test"}})
	res := w.run(t, sandbox.WorkspaceWrite, "cat /etc/hosts 2>/dev/null | wc -c; cat /etc/resolv.conf 2>/dev/null | wc -c; echo ran")
	assert.Equal(t, "0\n0\nran\n", res.Stdout.Text, res.Stderr.Text)
}
