package fsuser_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fsuser"
)

// The users of the tests: the workspace owner (harness-ci) and a third
// user whose private directory the owner cannot enter.
const (
	ownerUID = 1001
	otherUID = 1002
)

// privateTree makes <tmp>/other (0700, otherUID) holding secret (0600) and
// <tmp>/mine (0755, ownerUID), under a directory every user may search.
func privateTree(t *testing.T) (other, mine string) {
	t.Helper()
	base := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
	require.NoError(t, os.Chmod(base, 0o755))
	other, mine = filepath.Join(base, "other"), filepath.Join(base, "mine")
	require.NoError(t, os.Mkdir(other, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(other, "secret"), []byte("s3cret\n"), 0o600))
	require.NoError(t, os.Chown(filepath.Join(other, "secret"), otherUID, otherUID))
	require.NoError(t, os.Chown(other, otherUID, otherUID))
	require.NoError(t, os.Mkdir(mine, 0o755))
	require.NoError(t, os.Chown(mine, ownerUID, ownerUID))
	return other, mine
}

// threadIdentity is the calling thread's filesystem uid and gid and its
// supplementary groups, read from /proc/thread-self/status.
func threadIdentity(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/status")
	require.NoError(t, err)
	var out string
	for _, line := range strings.Split(string(b), "\n") {
		for _, k := range []string{"Uid:", "Gid:", "Groups:"} {
			if strings.HasPrefix(line, k) {
				out += line + "\n"
			}
		}
	}
	return out
}

// Issue 35: as root, a function run with the owner's identity cannot open
// another user's 0700 directory or what it holds, creates files the owner's,
// and leaves the thread as it found it (root reaches the secret again); a
// nested Do gives back the outer identity, not root's.
func TestDoActsAsTheUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("taking another user's identity needs a process running as root")
	}
	other, mine := privateTree(t)
	secret := filepath.Join(other, "secret")
	owner := &fsuser.User{UID: ownerUID, GID: ownerUID}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadIdentity(t)

	for _, c := range []struct {
		name string
		op   func() error
	}{
		{"read the secret", func() error { _, err := os.ReadFile(secret); return err }},
		{"list the directory", func() error { _, err := os.ReadDir(other); return err }},
		{"create in the directory", func() error { return os.WriteFile(filepath.Join(other, "new"), nil, 0o644) }},
		{"rename out of it", func() error { return os.Rename(secret, filepath.Join(mine, "stolen")) }},
		{"stat the secret", func() error { _, err := os.Stat(secret); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := owner.Do(c.op)
			assert.ErrorIs(t, err, unix.EACCES)
		})
	}
	b, err := os.ReadFile(secret)
	require.NoError(t, err, "root reaches the secret again after Do")
	assert.Equal(t, "s3cret\n", string(b))
	_, err = os.Stat(filepath.Join(mine, "stolen"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(filepath.Join(other, "new"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	made := filepath.Join(mine, "made")
	require.NoError(t, owner.Do(func() error {
		nested := &fsuser.User{UID: otherUID, GID: otherUID}
		if err := nested.Do(func() error { _, err := os.ReadFile(secret); return err }); err != nil {
			return err
		}
		// Back to the owner's identity, not root's, and a Do of the
		// identity the thread has leaves it so.
		for range 2 {
			if _, err := os.ReadFile(secret); !errors.Is(err, unix.EACCES) {
				return errors.New("the nested Do did not give back the owner's identity")
			}
			if err := owner.Do(func() error { return nil }); err != nil {
				return err
			}
		}
		return os.Mkdir(made, 0o755)
	}))
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(made, &st))
	assert.Equal(t, [2]uint32{ownerUID, ownerUID}, [2]uint32{st.Uid, st.Gid}, "a directory made under Do is the owner's")
	assert.Equal(t, before, threadIdentity(t), "the thread's identity is restored")

	// A panic in fn restores the identity too.
	assert.Panics(t, func() { _ = owner.Do(func() error { panic("boom") }) })
	assert.Equal(t, before, threadIdentity(t))
}

// A nil User runs fn as the process; one with a negative id refuses to run
// it.
func TestDoNilAndInvalid(t *testing.T) {
	var nilUser *fsuser.User
	ran := false
	require.NoError(t, nilUser.Do(func() error { ran = true; return nil }))
	assert.True(t, ran)
	ran = false
	err := (&fsuser.User{UID: -1, GID: 0}).Do(func() error { ran = true; return nil })
	require.Error(t, err)
	assert.False(t, ran)
}

// BenchmarkDo is the cost of taking an identity and giving it back around
// an empty function (as root; without root, the nil identity's).
func BenchmarkDo(b *testing.B) {
	u := &fsuser.User{UID: ownerUID, GID: ownerUID}
	if os.Geteuid() != 0 {
		u = nil
	}
	for b.Loop() {
		if err := u.Do(func() error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
