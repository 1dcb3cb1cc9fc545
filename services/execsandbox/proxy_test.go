//go:build linux

package execsandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	fixtures "github.com/dsh-go/harness/internal/fixture"
	hexec "github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// proxyWorld is a world whose runner proxies allowed.test (resolved to the
// host's 127.0.0.1).
func proxyWorld(t *testing.T, o owner) world {
	t.Helper()
	w := newWorld(t, o, hexec.Config{}, nil)
	r, err := execsandbox.New(execsandbox.Config{AllowDomains: []string{"allowed.test"}, Resolver: fixtures.LoopbackResolver{"allowed.test", "refused.test"}}, hexec.Config{}, w.pol)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	w.r = r
	return w
}

// TestDomainProxy (issue 24): with --allow-domain under network deny a
// command reaches a listed name through the proxy listening inside its
// namespace (HTTP_PROXY and the rest set), and nothing else: a name not
// listed gets 403 with the reason, the host's server receives nothing, and
// the refusal is in the result (the proxy's record); a direct connection
// to the host still fails; a host allowed once (Request.AllowHosts) is
// reached by that command only, one the session was granted by every later
// command of it; a command without a session has a proxy of its own.
func TestDomainProxy(t *testing.T) {
	longTest(t)
	pl := fixtures.Perl(t)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := proxyWorld(t, o)
			port, hits := fixtures.HTTPServer(t)
			ctx := session.NewContext(t.Context(), w.sess)
			runReq := func(ctx context.Context, command string, hosts []string) hexec.Result {
				t.Helper()
				res, err := w.r.Run(ctx, hexec.Request{
					Command: command, Workdir: w.ws, Timeout: time.Minute,
					Policy: carried(w.pol, sandbox.WorkspaceWrite, w.ws), AllowHosts: hosts,
				})
				require.NoError(t, err)
				return res
			}

			t.Run("the environment names the proxy", func(t *testing.T) {
				res := runReq(ctx, "env | grep -i _proxy= | sort", nil)
				require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
				lines := strings.Fields(res.Stdout.Text)
				require.Len(t, lines, 8, res.Stdout.Text)
				proxy := strings.TrimPrefix(lines[2], "HTTP_PROXY=")
				assert.Regexp(t, `^http://127\.0\.0\.1:\d+$`, proxy)
				port := strings.TrimPrefix(proxy, "http://127.0.0.1:")
				assert.Equal(t, []string{
					"ALL_PROXY=socks5h://127.0.0.1:" + port, "HTTPS_PROXY=http://127.0.0.1:" + port, "HTTP_PROXY=http://127.0.0.1:" + port,
					"NO_PROXY=localhost,127.0.0.1,::1", "all_proxy=socks5h://127.0.0.1:" + port, "http_proxy=http://127.0.0.1:" + port,
					"https_proxy=http://127.0.0.1:" + port, "no_proxy=localhost,127.0.0.1,::1",
				}, lines)
			})

			t.Run("a listed name is fetched through the proxy", func(t *testing.T) {
				before := hits.Load()
				res := runReq(ctx, fixtures.ProxyGet(pl, "allowed.test", port), nil)
				require.Equal(t, 0, res.ExitCode, res.Stdout.Text+res.Stderr.Text)
				assert.Contains(t, res.Stdout.Text, fmt.Sprintf("hello from the host to allowed.test:%d\n", port))
				assert.Equal(t, before+1, hits.Load())
				require.NotNil(t, res.Confinement)
				assert.Empty(t, res.Confinement.Refused)
			})

			t.Run("a name not listed gets 403, the host nothing, the result the refusal", func(t *testing.T) {
				before := hits.Load()
				res := runReq(ctx, fixtures.ProxyGet(pl, "refused.test", port), nil)
				assert.Equal(t, 22, res.ExitCode, res.Stdout.Text+res.Stderr.Text)
				assert.Contains(t, res.Stdout.Text, "403")
				assert.Contains(t, res.Stdout.Text, "not in --allow-domain")
				assert.Equal(t, before, hits.Load(), "the host's server received nothing")
				require.NotNil(t, res.Confinement)
				require.Len(t, res.Confinement.Refused, 1)
				assert.Equal(t, "refused.test", res.Confinement.Refused[0].Host)
				assert.Equal(t, port, res.Confinement.Refused[0].Port)
				assert.Contains(t, res.Confinement.Refused[0].Reason, "not in --allow-domain")

				next := runReq(ctx, "true", nil)
				assert.Empty(t, next.Confinement.Refused, "a refusal belongs to the command that ran then")
			})

			t.Run("a direct connection still fails", func(t *testing.T) {
				before := hits.Load()
				res := runReq(ctx, fixtures.ConnectTo(pl, "127.0.0.1", port, 3, "direct"), nil)
				assert.NotEqual(t, 0, res.ExitCode, res.Stdout.Text)
				assert.Equal(t, before, hits.Load())
			})

			t.Run("allowed once: this command only", func(t *testing.T) {
				before := hits.Load()
				res := runReq(ctx, fixtures.ProxyGet(pl, "refused.test", port), []string{"refused.test"})
				require.Equal(t, 0, res.ExitCode, res.Stdout.Text+res.Stderr.Text)
				assert.Contains(t, res.Stdout.Text, "hello from the host to refused.test")
				assert.Empty(t, res.Confinement.Refused)
				res = runReq(ctx, fixtures.ProxyGet(pl, "refused.test", port), nil)
				assert.Equal(t, 22, res.ExitCode, res.Stdout.Text)
				assert.Equal(t, before+1, hits.Load())
			})

			t.Run("allowed for the session: every later command of it, not another session", func(t *testing.T) {
				tracker := session.NewTracker()
				other := tracker.Start("other", w.ws)
				t.Cleanup(func() { tracker.End(other) })
				granted, err := sandboxpolicy.EscalateHosts(t.Context(), sandbox.ApproverFunc(func(context.Context, sandbox.ApprovalRequest) (sandbox.Outcome, error) {
					return sandbox.AllowedForSession, nil
				}), w.sess, sandbox.ApprovalRequest{Family: sandbox.Commands, Hosts: []string{"refused.test"}, Justification: "test"})
				require.NoError(t, err)
				require.True(t, granted)
				for range 2 {
					res := runReq(ctx, fixtures.ProxyGet(pl, "refused.test", port), nil)
					require.Equal(t, 0, res.ExitCode, res.Stdout.Text+res.Stderr.Text)
				}
				res := runReq(session.NewContext(t.Context(), other), fixtures.ProxyGet(pl, "refused.test", port), nil)
				assert.Equal(t, 22, res.ExitCode, "another session is not granted: %s", res.Stdout.Text)
			})

			t.Run("a command without a session has a proxy of its own", func(t *testing.T) {
				res := runReq(t.Context(), fixtures.ProxyGet(pl, "allowed.test", port), nil)
				require.Equal(t, 0, res.ExitCode, res.Stdout.Text+res.Stderr.Text)
				res = runReq(t.Context(), fixtures.ProxyGet(pl, "refused.test", port), nil)
				assert.Equal(t, 22, res.ExitCode, res.Stdout.Text)
				require.Len(t, res.Confinement.Refused, 1)
			})
		})
	}
}

// TestDomainProxyCurl: curl, following the variables, fetches a listed name
// through a CONNECT tunnel (-p) and through SOCKS5 (ALL_PROXY), is refused
// one not listed either way (the 403 of CONNECT, the SOCKS refusal), and
// reaches a server of the session on 127.0.0.1
// directly (NO_PROXY), which the proxy never sees.
func TestDomainProxyCurl(t *testing.T) {
	longTest(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed; TestDomainProxy covers the proxy with perl")
	}
	pl := fixtures.Perl(t)
	w := proxyWorld(t, primaryOwner())
	port, hits := fixtures.HTTPServer(t)
	res := w.run(t, sandbox.WorkspaceWrite, fmt.Sprintf("%s -sS -f -p http://allowed.test:%d/", curl, port))
	require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
	assert.Equal(t, fmt.Sprintf("hello from the host to allowed.test:%d\n", port), res.Stdout.Text)

	before := hits.Load()
	res = w.run(t, sandbox.WorkspaceWrite, fmt.Sprintf("%s -sS -f -p https://refused.test:%d/", curl, port))
	assert.NotEqual(t, 0, res.ExitCode)
	assert.Contains(t, res.Stderr.Text, "403")
	assert.Equal(t, before, hits.Load())
	require.Len(t, res.Confinement.Refused, 1)
	assert.Equal(t, "refused.test", res.Confinement.Refused[0].Host)

	// SOCKS5 (ALL_PROXY, names resolved by the proxy) for the same.
	res = w.run(t, sandbox.WorkspaceWrite, fmt.Sprintf(`%s -sS -f -x "$ALL_PROXY" http://allowed.test:%d/socks`, curl, port))
	require.Equal(t, 0, res.ExitCode, res.Stderr.Text)
	assert.Equal(t, fmt.Sprintf("hello from the host to allowed.test:%d\n", port), res.Stdout.Text)
	before = hits.Load()
	res = w.run(t, sandbox.WorkspaceWrite, fmt.Sprintf(`%s -sS -f -x "$ALL_PROXY" http://refused.test:%d/socks`, curl, port))
	assert.NotEqual(t, 0, res.ExitCode)
	assert.Equal(t, before, hits.Load())
	require.Len(t, res.Confinement.Refused, 1)
	assert.Equal(t, "refused.test", res.Confinement.Refused[0].Host)

	// The session's own server, on its loopback: curl goes direct.
	const local = 4323
	serve := fmt.Sprintf(`%s -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1:%d", Listen => 1, ReuseAddr => 1) or die "listen: $!\n"; `+
		`$SIG{ALRM} = sub { die "no connection\n" }; alarm 30; $c = $s->accept; $l = <$c>; print $c "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nlocal\n"; close $c; print $l'`, pl, local)
	var wg sync.WaitGroup
	var server hexec.Result
	var serverErr error
	wg.Go(func() { server, serverErr = w.try(t.Context(), sandbox.WorkspaceWrite, serve, time.Minute) })
	var client hexec.Result
	for range 50 {
		client = w.run(t, sandbox.WorkspaceWrite, fmt.Sprintf("%s -sS -f http://127.0.0.1:%d/dev", curl, local))
		if client.ExitCode == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	require.NoError(t, serverErr)
	assert.Equal(t, 0, client.ExitCode, client.Stderr.Text)
	assert.Equal(t, "local\n", client.Stdout.Text)
	assert.Equal(t, "GET /dev HTTP/1.1\r\n", server.Stdout.Text, "direct: the origin form, not a proxy's absolute form")
	assert.Empty(t, client.Confinement.Refused)
}

// TestDomainProxyConfig: allowed domains refuse network allow, the
// landlock isolation and a name the proxy cannot take, each at New.
func TestDomainProxyConfig(t *testing.T) {
	_, pol := newFixtureWith(t, nil)
	for _, tc := range []struct {
		name string
		cfg  execsandbox.Config
		want string
	}{
		{"network allow", execsandbox.Config{Network: true, AllowDomains: []string{"github.com"}}, "cannot be combined with network allow"},
		{"landlock", execsandbox.Config{Isolation: execsandbox.IsolationLandlock, AllowDomains: []string{"github.com"}}, "need the bubblewrap isolation"},
		{"a URL", execsandbox.Config{AllowDomains: []string{"https://github.com"}}, "https://github.com"},
		{"a bare wildcard", execsandbox.Config{AllowDomains: []string{"*"}}, `"*"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := execsandbox.New(tc.cfg, hexec.Config{}, pol)
			var ee *hexec.Error
			require.True(t, errors.As(err, &ee), "%v", err)
			assert.Equal(t, hexec.CodeInvalidRequest, ee.Code)
			assert.Contains(t, ee.Message, tc.want)
		})
	}
	r, err := execsandbox.New(execsandbox.Config{AllowDomains: []string{"GitHub.com.", "*.npmjs.org"}}, hexec.Config{}, pol)
	require.NoError(t, err)
	defer r.Close() //nolint:errcheck // test
	assert.True(t, r.GrantsHosts())
	iso := r.Isolation()
	assert.Equal(t, []string{"github.com", "*.npmjs.org"}, iso.AllowDomains)
	assert.Contains(t, iso.NotCovered[len(iso.NotCovered)-1], "what a command sends to an allowed host")
}

// TestDomainProxyLog (issue 24): the proxy's allowances and refusals reach
// the runner's logger, with the session and the host.
func TestDomainProxyLog(t *testing.T) {
	pl := fixtures.Perl(t)
	w := newWorld(t, primaryOwner(), hexec.Config{}, nil)
	core, logs := observer.New(zap.InfoLevel)
	r, err := execsandbox.New(execsandbox.Config{
		AllowDomains: []string{"allowed.test"}, Resolver: fixtures.LoopbackResolver{"allowed.test", "refused.test"}, Log: zap.New(core),
	}, hexec.Config{}, w.pol)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	w.r = r
	port, _ := fixtures.HTTPServer(t)
	require.Equal(t, 0, w.run(t, sandbox.WorkspaceWrite, fixtures.ProxyGet(pl, "allowed.test", port)).ExitCode)
	require.Equal(t, 22, w.run(t, sandbox.WorkspaceWrite, fixtures.ProxyGet(pl, "refused.test", port)).ExitCode)
	for msg, host := range map[string]string{"network access allowed": "allowed.test", "network access refused": "refused.test"} {
		entries := logs.FilterMessage(msg).AllUntimed()
		require.Len(t, entries, 1, msg)
		fields := entries[0].ContextMap()
		assert.Equal(t, host, fields["host"])
		assert.Equal(t, w.sess.ID(), fields["session"])
		assert.Equal(t, "netproxy", entries[0].LoggerName)
	}
}
