//go:build linux

package execsandbox

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
)

// TestAccountReadsACLs: the deny-read masks' and the workdir's search check
// and the named sockets' write check read an access ACL as the kernel does
// (fsuser.Account.May, issue 37's one rule): another user's 0700 directory
// whose ACL lets the command's user search it is searchable (it was
// refused as unreachable, and a deny-read path below it masked at the
// directory); a socket whose ACL grants no write to that user is not
// writable (any ACL counted as granting). Root only: the fixtures belong
// to other users.
func TestAccountReadsACLs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("files owned by other users need root")
	}
	base := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
	require.NoError(t, os.Chmod(base, 0o755))
	home := filepath.Join(base, "home")
	work := filepath.Join(home, "work")
	require.NoError(t, os.MkdirAll(work, 0o755))
	require.NoError(t, os.Chmod(home, 0o700))
	require.NoError(t, os.Chown(home, 1000, 1000))
	guest, stranger := account{uid: 2000, gids: []uint32{2000}}, account{uid: 3000, gids: []uint32{3000}}

	assert.Equal(t, home, guest.unreachable(work), "mode 0700 of uid 1000")
	fixture.UserACL(t, home, 2000, 1)
	assert.Empty(t, guest.unreachable(work), "the ACL lets uid 2000 search it")
	assert.Empty(t, guest.unsearchable(filepath.Join(work, ".env")))
	assert.Equal(t, home, stranger.unreachable(work), "no entry for uid 3000")

	sock := filepath.Join(base, "agent.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	require.NoError(t, os.Chmod(sock, 0o700))
	require.NoError(t, os.Chown(sock, 1000, 1000))
	fixture.UserACL(t, sock, 2000, 4) // read only: connecting needs write
	assert.False(t, permits(sock, 2000, []uint32{2000}, 0o2), "the ACL grants uid 2000 no write")
	fixture.UserACL(t, sock, 2000, 6)
	assert.True(t, permits(sock, 2000, []uint32{2000}, 0o2), "the ACL grants uid 2000 write")
	assert.False(t, permits(sock, 3000, []uint32{3000}, 0o2), "no entry for uid 3000")
}
