package compose

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
)

// TestPassthroughNamesTheSSHAgent: a --unix-socket that is the server's
// SSH_AUTH_SOCK (by any path to it) passes SSH_AUTH_SOCK to commands;
// another socket, or none, does not.
func TestPassthroughNamesTheSSHAgent(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	agent, other := filepath.Join(dir, "agent.sock"), filepath.Join(dir, "other.sock")
	for _, p := range []string{agent, other} {
		l, err := net.Listen("unix", p)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
	}
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(agent, link))
	env := func(sock string) func(string) string {
		return func(n string) string {
			switch n {
			case "SSH_AUTH_SOCK":
				return sock
			case "GNUPGHOME":
				return "/srv/gnupg"
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name  string
		cfg   config.Config
		sock  string
		wants []string
	}{
		{"the agent named", config.Config{UnixSocketPaths: []string{other, agent}, ExecEnv: []string{"GOFLAGS"}}, agent, []string{"GOFLAGS", "SSH_AUTH_SOCK"}},
		{"named through a symlink", config.Config{UnixSocketPaths: []string{agent}}, link, []string{"SSH_AUTH_SOCK"}},
		{"another socket named", config.Config{UnixSocketPaths: []string{other}}, agent, nil},
		{"no agent", config.Config{UnixSocketPaths: []string{agent}}, "", nil},
		{"--gpg-agent passes GNUPGHOME", config.Config{GPGAgent: true}, "", []string{"GNUPGHOME"}},
		{"passed already", config.Config{UnixSocketPaths: []string{agent}, ExecEnv: []string{"SSH_AUTH_SOCK"}}, agent, []string{"SSH_AUTH_SOCK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wants, passthrough(tc.cfg, env(tc.sock)))
		})
	}
}
