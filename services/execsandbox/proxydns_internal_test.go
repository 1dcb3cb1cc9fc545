//go:build linux

package execsandbox

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/netproxy"
)

// addrOnly is a listener that only has an address (a gate's listener in a
// test without a namespace).
type addrOnly struct{ a net.Addr }

func (l addrOnly) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (l addrOnly) Close() error              { return nil }
func (l addrOnly) Addr() net.Addr            { return l.a }

// query packs a question for name of type typ.
func query(t *testing.T, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
	require.NoError(t, b.StartQuestions())
	require.NoError(t, b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}))
	out, err := b.Finish()
	require.NoError(t, err)
	return out
}

// TestGateAnswers: the name server's answers, message by message: an
// admitted name (a wildcard's) gets its address for A and no record for
// AAAA; a refused one NXDOMAIN and a refusal recorded for the command
// running; a message that is not a query none.
func TestGateAnswers(t *testing.T) {
	p, err := netproxy.New(netproxy.Config{Allow: []string{"*.allowed.test:8080"}}, nil)
	require.NoError(t, err)
	first := netip.AddrPortFrom(firstDirectAddr, 8080)
	g := &gate{proxy: p, log: zap.NewNop(), running: map[*watch]struct{}{}}
	// No namespace here: the name's listener stands made.
	g.direct = directs{
		addr: map[string]netip.Addr{"api.allowed.test": firstDirectAddr}, failed: map[netip.AddrPort]bool{},
		next: firstDirectAddr.Next(), lns: []net.Listener{addrOnly{net.TCPAddrFromAddrPort(first)}},
	}
	w := g.enter(nil)

	parse := func(resp []byte) (dnsmessage.Header, []dnsmessage.Resource) {
		t.Helper()
		var m dnsmessage.Message
		require.NoError(t, m.Unpack(resp))
		assert.Equal(t, uint16(7), m.ID)
		assert.True(t, m.Response)
		return m.Header, m.Answers
	}
	h, answers := parse(g.answer(query(t, "API.allowed.test.", dnsmessage.TypeA)))
	assert.Equal(t, dnsmessage.RCodeSuccess, h.RCode)
	require.Len(t, answers, 1)
	assert.Equal(t, firstDirectAddr.As4(), answers[0].Body.(*dnsmessage.AResource).A)
	h, answers = parse(g.answer(query(t, "api.allowed.test.", dnsmessage.TypeAAAA)))
	assert.Equal(t, dnsmessage.RCodeSuccess, h.RCode)
	assert.Empty(t, answers)
	h, answers = parse(g.answer(query(t, "evil.example.", dnsmessage.TypeA)))
	assert.Equal(t, dnsmessage.RCodeNameError, h.RCode)
	assert.Empty(t, answers)
	h, _ = parse(g.answer(query(t, "a.b.", dnsmessage.TypeA)[:12]))
	assert.Equal(t, dnsmessage.RCodeFormatError, h.RCode, "no question")

	refused := g.leave(w)
	require.Len(t, refused.hosts, 1)
	assert.Equal(t, "evil.example", refused.hosts[0].Host)
	assert.Zero(t, refused.hosts[0].Port)
}

// TestReadableHosts: the host's hosts file goes into a command's only when
// every user may read it.
func TestReadableHosts(t *testing.T) {
	dir := t.TempDir()
	for mode, want := range map[os.FileMode]bool{0o644: true, 0o604: true, 0o640: false, 0o600: false} {
		p := filepath.Join(dir, mode.String())
		require.NoError(t, os.WriteFile(p, []byte("10.1.2.3 secret.internal\n"), mode))
		require.NoError(t, os.Chmod(p, mode))
		b, ok := readableHosts(p)
		assert.Equal(t, want, ok, mode)
		if want {
			assert.Equal(t, "10.1.2.3 secret.internal\n", string(b))
		}
	}
	_, ok := readableHosts(dir)
	assert.False(t, ok, "a directory")
}

// TestGateLookupBounds (after the attack review): a closed gate makes no
// listener for a name asked after it closed (a command running past its
// session's end remade one, and Close waited for it for ever); listeners
// that could not be made count against subproc.MaxDirect (a command taking
// the ports first made the gate hand out addresses without end); a name
// with no listener serving it gets no address and is no refusal of the host.
func TestGateLookupBounds(t *testing.T) {
	p, err := netproxy.New(netproxy.Config{Allow: []string{"*.allowed.test:8080"}}, nil)
	require.NoError(t, err)
	newGate := func() *gate {
		g := &gate{proxy: p, log: zap.NewNop(), running: map[*watch]struct{}{}}
		g.direct = directs{addr: map[string]netip.Addr{}, failed: map[netip.AddrPort]bool{}, next: firstDirectAddr}
		return g
	}

	// No namespace here: any listener asked for would panic.
	g := newGate()
	g.direct.closed = true
	w := g.enter(nil)
	_, reason, refused := g.lookup("api.allowed.test")
	assert.NotEmpty(t, reason)
	assert.False(t, refused)
	assert.Empty(t, g.leave(w).hosts, "no refusal recorded")
	assert.Empty(t, g.direct.addr, "no address handed out")

	g = newGate()
	for i := range subproc.MaxDirect {
		g.direct.failed[netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 77, 1, byte(i)}), 8080)] = true
	}
	_, reason, refused = g.lookup("api.allowed.test")
	assert.Contains(t, reason, "no direct address serving it")
	assert.False(t, refused)
	assert.Empty(t, g.direct.addr, "no address handed out past the bound")
}
