//go:build linux

package execsandbox_test

import (
	"encoding/binary"
	"fmt"
	"os"
	osexec "os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// keyringEnv carries the server's keys to the child server of
// TestCommandsReachNoKeyOfTheServer: its session keyring, the key in it,
// the user keyring and the key in that.
const keyringEnv = "HARNESS_TEST_SERVER_KEYS"

// serverKeys are the keys a server holds.
type serverKeys struct {
	ring, key, userRing, userKey int
	// marker names the key only a possessor of the session keyring sees.
	marker string
}

// TestCommandsReachNoKeyOfTheServer (issue 35): a server whose session
// keyring holds a key (its parent added it, as a login session holds
// kerberos, fscrypt and ecryptfs keys); its commands, under read-only too,
// read that key, replaced its payload and linked a new key into it. Now the
// key's payload and permissions, and what each keyring holds, are as they
// were on the host after every command tried, by possession (the inherited
// session keyring) and by id (each id given), with the user keyring's too;
// no command's output holds a payload, and none possesses the server's
// session keyring (a key only its possessor may view is not in its
// /proc/keys; seen only where the key's owner is mapped in the command's
// user namespace: the server's own user, not another's workspace).
//
// The server is this test binary run again (a child of a thread that
// joined a keyring of its own): a Go process's session keyring is its
// threads', so only a process started from that thread has it in all.
func TestCommandsReachNoKeyOfTheServer(t *testing.T) {
	if v := os.Getenv(keyringEnv); v != "" {
		var k serverKeys
		_, err := fmt.Sscan(v, &k.ring, &k.key, &k.userRing, &k.userKey, &k.marker)
		require.NoError(t, err)
		commandsTryKeys(t, k)
		return
	}
	python3(t)
	// Never unlocked: the thread, with its session keyring, ends with the
	// test.
	runtime.LockOSThread()
	marker := uniqueMarker()
	var k serverKeys
	var err error
	k.ring, err = unix.KeyctlJoinSessionKeyring("harness-test-" + marker)
	if err != nil {
		t.Skip("this kernel keeps no keyrings: " + err.Error())
	}
	k.key, err = unix.AddKey("user", "harness-test-session-"+marker, []byte("session-secret"), k.ring)
	require.NoError(t, err)
	k.userRing, err = unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, true)
	require.NoError(t, err)
	k.userKey, err = unix.AddKey("user", "harness-test-user-"+marker, []byte("user-secret"), k.userRing)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = unix.KeyctlInt(unix.KEYCTL_UNLINK, k.userKey, k.userRing, 0, 0) })
	// Linked into the session keyring, as a login session's is: this
	// process possesses it.
	_, err = unix.KeyctlInt(unix.KEYCTL_LINK, k.userRing, k.ring, 0, 0)
	require.NoError(t, err)
	// Seen in /proc/keys by its possessor only.
	possessed, err := unix.AddKey("user", "harness-test-possessed-"+marker, []byte("x"), k.ring)
	require.NoError(t, err)
	require.NoError(t, unix.KeyctlSetperm(possessed, 0x3f000000))
	before := keysState(t, k)

	child := osexec.Command(os.Args[0], "-test.run=^TestCommandsReachNoKeyOfTheServer$", "-test.count=1", "-test.v")
	child.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %d %d %s", keyringEnv, k.ring, k.key, k.userRing, k.userKey, marker))
	out, err := child.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("%s", out)
	require.Contains(t, string(out), "--- PASS: TestCommandsReachNoKeyOfTheServer")
	require.Equal(t, before, keysState(t, k))
}

// keysOf is what the host holds of a server's keys: each key's payload
// and description (its permissions), each keyring's list of keys.
type keysOf struct {
	Payload, Described map[int]string
	Linked             map[int][]int32
}

func keysState(t *testing.T, k serverKeys) keysOf {
	t.Helper()
	s := keysOf{Payload: map[int]string{}, Described: map[int]string{}, Linked: map[int][]int32{}}
	for _, id := range []int{k.key, k.userKey} {
		buf := make([]byte, 256)
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
		require.NoError(t, err)
		s.Payload[id] = string(buf[:n])
		s.Described[id], err = unix.KeyctlString(unix.KEYCTL_DESCRIBE, id)
		require.NoError(t, err)
	}
	for _, ring := range []int{k.ring, k.userRing} {
		buf := make([]byte, 4096)
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, ring, buf, 0)
		require.NoError(t, err)
		for i := 0; i+4 <= n && i+4 <= len(buf); i += 4 {
			s.Linked[ring] = append(s.Linked[ring], int32(binary.NativeEndian.Uint32(buf[i:])))
		}
	}
	return s
}

// commandsTryKeys is the child server: its commands, in a workspace of each
// owner and under each confined mode, read, update, re-permission and link
// into the server's keys by every way in, and print what they got.
func commandsTryKeys(t *testing.T, k serverKeys) {
	script := fmt.Sprintf(`import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
KEYCTL, ADD_KEY = %d, %d
def kc(name, *args):
    r = libc.syscall(KEYCTL, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    print(name, r, errno.errorcode.get(ctypes.get_errno(), '') if r < 0 else '')
    return r
def read(name, id):
    buf = ctypes.create_string_buffer(256)
    r = libc.syscall(KEYCTL, ctypes.c_long(11), ctypes.c_long(id), buf, ctypes.c_long(256))
    print(name, r, buf.raw[:max(r, 0)])
def add(name, ring):
    print(name, libc.syscall(ADD_KEY, b'user', b'planted', b'x', ctypes.c_long(1), ctypes.c_long(ring)))
for ring, key in ((-3, %d), (%d, %d), (-4, %d), (%d, %d)):
    kc('session id', 0, -3, 0)
    read('read', key)
    kc('update', 2, key, b'command-wrote', 13)
    kc('setperm', 5, key, 0x3f3f3f3f)
    read('read after setperm', key)
    kc('update after setperm', 2, key, b'command-wrote', 13)
    read('list', ring)
    add('add_key', ring)
    kc('link', 8, key, ring)
    kc('unlink', 9, key, ring)
    kc('clear', 7, ring)
`, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, k.key, k.ring, k.key, k.userKey, k.userRing, k.userKey)
	for _, o := range owners() {
		t.Run(o.name, func(t *testing.T) {
			w := newWorld(t, o, exec.Config{}, nil)
			for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
				t.Run(string(mode), func(t *testing.T) {
					res := w.run(t, mode, pyCommand(t, script))
					require.Equal(t, 0, res.ExitCode, "%q", res.Stderr.Text)
					t.Log(res.Stdout.Text)
					for _, secret := range []string{"session-secret", "user-secret"} {
						require.NotContains(t, res.Stdout.Text, secret)
					}
					require.NotContains(t, res.Stdout.Text, "session id "+strconv.Itoa(k.ring)+" ")
					require.True(t, strings.Contains(res.Stdout.Text, "read "), "%q", res.Stdout.Text)
					// Possession: the server's session keyring is not the
					// command's.
					res = w.run(t, mode, "cat /proc/keys")
					require.NotContains(t, res.Stdout.Text, "harness-test-possessed-"+k.marker)
				})
			}
		})
	}
}
