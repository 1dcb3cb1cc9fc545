package toolexec

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/exec"
)

// The network denial's detail says which Unix sockets the command had: none,
// or only the named ones.
func TestNetworkDetailNamesTheUnixSockets(t *testing.T) {
	const unreachable = "OSError: [Errno 101] Network is unreachable\n"
	for _, c := range []struct {
		name    string
		conf    exec.Confinement
		want    string
		notWant string
	}{
		{"none", exec.Confinement{}, "--unix-sockets deny: no Unix sockets;", "named"},
		{
			"named",
			exec.Confinement{UnixSocketPaths: []string{"/run/a.sock", "/run/b.sock"}},
			"--unix-sockets deny: no Unix sockets but the named ones (/run/a.sock, /run/b.sock);", "",
		},
		{"allowed", exec.Confinement{UnixSockets: true, UnixSocketPaths: []string{"/run/a.sock"}}, "--network deny: no network beyond loopback, no name lookups;", "--unix-sockets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			detail, ok := inferNetworkDenial(&c.conf, unreachable)
			assert.True(t, ok)
			assert.Contains(t, detail, c.want)
			if c.notWant != "" {
				assert.NotContains(t, detail, c.notWant)
			}
		})
	}
}
