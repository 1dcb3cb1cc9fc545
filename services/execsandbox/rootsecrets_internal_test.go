//go:build linux

package execsandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/sandbox"
)

// BenchmarkRootSecrets is the walk a root-owned workspace's command pays at
// each start (rootSecrets over this host's system locations).
func BenchmarkRootSecrets(b *testing.B) {
	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: b.TempDir()}
	for b.Loop() {
		masks, _, err := rootSecrets(b.Context(), policy, "/root", []uint32{0}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(masks)), "masks")
	}
}

// TestMergeMasksOncePerPath: a path the deny-read set masks and the
// root-secrets walk masks too is masked once (bubblewrap cannot bind a
// second mask on the first; a file's and a directory's: the directory's),
// and nothing beneath a masked directory.
func TestMergeMasksOncePerPath(t *testing.T) {
	got := mergeMasks(
		[]subproc.Masked{{Path: "/srv/a/principals.yaml"}, {Path: "/srv/b"}, {Path: "/srv/c/x"}},
		[]subproc.Masked{{Path: "/srv/a/principals.yaml"}, {Path: "/srv/b", Dir: true}, {Path: "/srv/c", Dir: true}, {Path: "/srv/d"}},
	)
	require.Equal(t, []subproc.Masked{
		{Path: "/srv/a/principals.yaml"}, {Path: "/srv/b", Dir: true}, {Path: "/srv/c", Dir: true}, {Path: "/srv/d"},
	}, got)
}

// TestRootSecretsLeaveTempAreasAlone: a sticky, world-writable directory
// beneath a system location (/var/tmp) is a temp area whose entries other
// processes make and remove at any time; the walk neither masks nor enters
// it, so a root-only directory there that vanishes before the start cannot
// fail the command.
func TestRootSecretsLeaveTempAreasAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the fixture is root's directory beneath /var/lib")
	}
	base, err := os.MkdirTemp("/var/lib", "harness-tmparea-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	area := filepath.Join(base, "tmp")
	require.NoError(t, os.Mkdir(area, 0o755))
	require.NoError(t, os.Chmod(area, 0o777|os.ModeSticky))
	private := filepath.Join(area, "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	secret := filepath.Join(base, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s"), 0o600))

	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: t.TempDir()}
	masks, _, err := rootSecrets(t.Context(), policy, "/root", []uint32{0}, nil)
	require.NoError(t, err)
	paths := make([]string, 0, len(masks))
	for _, m := range masks {
		paths = append(paths, m.Path)
	}
	require.Contains(t, paths, secret, "root's file beside the temp area is masked")
	for _, p := range paths {
		require.False(t, p == area || dirfd.Beneath(area, p), "nothing in the temp area is judged: %s", p)
	}
}

// TestRootSecretsPastTheBound (a root server in a container whose /opt
// holds 300,000 files refused every command): past the bound of entries
// read beneath one system directory, each directory not yet read there is
// masked whole, unread, and the walk ends without error; the next system
// directory has a bound of its own. A directory that holds the workspace
// cannot be masked: the command is refused then.
func TestRootSecretsPastTheBound(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"sys/big/a", "sys/big/b", "sys/big/c", "sys/small", "other/x"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	for _, d := range []string{"sys/big/a", "sys/big/b", "other/x"} {
		for i := range 30 {
			require.NoError(t, os.WriteFile(filepath.Join(base, d, "f"+strconv.Itoa(i)), nil, 0o644))
		}
	}
	sys, other := filepath.Join(base, "sys"), filepath.Join(base, "other")
	oldDirs, oldMax := systemDirs, maxSecretEntries
	t.Cleanup(func() { systemDirs, maxSecretEntries = oldDirs, oldMax })
	systemDirs, maxSecretEntries = []string{sys, other}, 50
	ws := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))
	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws}
	masks, _, err := rootSecrets(t.Context(), policy, "/root", []uint32{0}, nil)
	require.NoError(t, err)
	// sys (2 entries), big (3), a (30), b (30: past 50) masked whole, then
	// c and small unread; other's own bound: x read.
	assert.Equal(t, []subproc.Masked{
		{Path: filepath.Join(sys, "big/b"), Dir: true},
		{Path: filepath.Join(sys, "big/c"), Dir: true},
		{Path: filepath.Join(sys, "small"), Dir: true},
	}, masks)

	// A workspace in small: small cannot be masked, nor read.
	policy.WorkspaceRoot = filepath.Join(sys, "small/ws")
	require.NoError(t, os.Mkdir(policy.WorkspaceRoot, 0o755))
	_, _, err = rootSecrets(t.Context(), policy, "/root", []uint32{0}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot be masked whole")
}
