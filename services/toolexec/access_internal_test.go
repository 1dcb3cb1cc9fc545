package toolexec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	testfixture "github.com/dsh-go/harness/internal/fixture"

	"github.com/dsh-go/harness/services/exec"
)

// TestWritableUnconfinedReadsACLs: a file or directory another user owns
// that an access ACL lets the command's user write is writable to it
// (a refusal there is the sandbox's), as the kernel decides; the mode bits
// alone said it was not (issue 37: one rule for the account's rights).
// Root only: the fixtures belong to other users.
func TestWritableUnconfinedReadsACLs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("files owned by other users need root")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "shared.txt")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	require.NoError(t, os.Chown(file, 1000, 1000))
	sub := filepath.Join(dir, "shared")
	require.NoError(t, os.Mkdir(sub, 0o700))
	require.NoError(t, os.Chown(sub, 1000, 1000))
	as := func(uid uint32) *exec.Confinement { return &exec.Confinement{UID: uid, GIDs: []uint32{uid}} }

	assert.False(t, writableUnconfined(as(2000), file), "mode 0600 of uid 1000")
	assert.False(t, writableUnconfined(as(2000), filepath.Join(sub, "new")), "mode 0700 of uid 1000")
	testfixture.UserACL(t, file, 2000, 6)
	testfixture.UserACL(t, sub, 2000, 3)
	assert.True(t, writableUnconfined(as(2000), file), "the ACL lets uid 2000 write it")
	assert.True(t, writableUnconfined(as(2000), filepath.Join(sub, "new")), "the ACL lets uid 2000 create in it")
	assert.False(t, writableUnconfined(as(3000), file), "no entry for uid 3000")
	assert.True(t, writableUnconfined(as(1000), file), "the owner")
}
