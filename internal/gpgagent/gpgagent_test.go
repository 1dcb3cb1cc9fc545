package gpgagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseDirs(t *testing.T) {
	got := parseDirs([]byte("homedir:/home/a%3ab/.gnupg\nagent-socket:/run/user/1000/gnupg/S.gpg-agent\nnot a line\nbad:%zz\n"))
	assert.Equal(t, map[string]string{
		"homedir":      "/home/a:b/.gnupg",
		"agent-socket": "/run/user/1000/gnupg/S.gpg-agent",
		"bad":          "%zz",
	}, got)
}

// TestFind starts an agent for a fresh GnuPG home and finds its sockets
// (GnuPG's own gpgconf).
func TestFind(t *testing.T) {
	if _, err := exec.LookPath("gpgconf"); err != nil {
		t.Skip("gpgconf is not installed (Debian's gnupg package)")
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	gnupg := filepath.Join(home, ".gnupg")
	require.NoError(t, os.Mkdir(gnupg, 0o700))
	t.Setenv("HOME", home)
	t.Setenv("GNUPGHOME", gnupg)
	t.Cleanup(func() { _ = exec.Command("gpgconf", "--kill", "gpg-agent").Run() })
	a, err := Find(t.Context())
	require.NoError(t, err)
	assert.Equal(t, gnupg, a.Home)
	for _, s := range []string{a.Socket, a.ExtraSocket} {
		fi, err := os.Stat(s)
		require.NoError(t, err)
		assert.Equal(t, os.ModeSocket, fi.Mode().Type(), s)
	}
	assert.NotEqual(t, a.Socket, a.ExtraSocket)
}

func TestFindWithoutGpgconf(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Find(t.Context())
	require.ErrorContains(t, err, "gpgconf is not installed")
}
