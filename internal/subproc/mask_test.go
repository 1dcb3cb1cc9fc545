//go:build linux

package subproc_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestBwrapMasks: a masked directory lists empty and takes nothing, a
// masked file is an empty read-only file of mode 0000 that cannot be read,
// in both the read-only and the full-access view; the host's files are
// unchanged and nothing is made beside them.
func TestBwrapMasks(t *testing.T) {
	requireLandlock(t)
	ws := t.TempDir()
	dir, file := filepath.Join(ws, "secrets"), filepath.Join(ws, ".env")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key"), []byte("SECRET-DIR"), 0o600))
	require.NoError(t, os.WriteFile(file, []byte("SECRET-FILE"), 0o600))
	masked := []subproc.Masked{{Path: dir, Dir: true}, {Path: file}}
	for _, c := range []struct {
		name string
		conf subproc.Confinement
	}{
		{"workspace writable", subproc.Confinement{WritableRoots: []string{ws}, Masked: masked}},
		{"read-only", subproc.Confinement{Masked: masked}},
		{"full access", subproc.Confinement{WritableRoots: []string{"/"}, FullAccess: true, Network: true, UnixSockets: true, Masked: masked}},
	} {
		t.Run(c.name, func(t *testing.T) {
			conf := c.conf
			out, stdout, stderr := runBwrap(t.Context(), t, subproc.Spec{
				Command: `ls -A secrets | wc -l; cat secrets/key .env; stat -c '%a %s' .env; touch secrets/new; echo x > .env; rm -f .env; mv secrets s2; true`,
				Dir:     ws, Confine: &conf,
			}, time.Minute)
			require.True(t, out.Status.Started, out.Status.Error)
			assert.Equal(t, "0\n0 0\n", stdout)
			assert.Contains(t, stderr, "secrets/key: No such file or directory")
			assert.Contains(t, stderr, ".env: Permission denied")
			assert.NotContains(t, stdout+stderr, "SECRET")
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, "SECRET-FILE", string(b))
			info, err := os.Stat(file)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1)
			assert.Equal(t, "key", entries[0].Name())
			entries, err = os.ReadDir(ws)
			require.NoError(t, err)
			assert.Len(t, entries, 2, "nothing made beside them")
		})
	}
}

// TestBwrapRefusesTooManyFileMasks: past 4,096 file masks the command is
// not run.
func TestBwrapRefusesTooManyFileMasks(t *testing.T) {
	requireLandlock(t)
	ws := t.TempDir()
	var masked []subproc.Masked
	for i := range 4097 {
		masked = append(masked, subproc.Masked{Path: filepath.Join(ws, "f"+strconv.Itoa(i))})
	}
	_, err := subproc.RunBwrap(t.Context(), sandbox(t), subproc.Spec{
		Command: "touch ran", Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}, Confine: &subproc.Confinement{WritableRoots: []string{ws}, Masked: masked},
	}, time.Minute, 1<<20, nil, subproc.Watch{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than 4096 files")
	assert.NoFileExists(t, filepath.Join(ws, "ran"))
}

// TestMaskAncestors: the directories pinned for each mask are those between
// it and the deepest writable root holding it (all the way up to `/` under
// full access), parents first, none in a read-only area, beneath a
// protected path, or beneath /dev or /proc.
func TestMaskAncestors(t *testing.T) {
	for _, c := range []struct {
		name string
		conf subproc.Confinement
		want []string
	}{
		{"no writable root: nothing bound", subproc.Confinement{Masked: []subproc.Masked{{Path: "/h/.config/gh", Dir: true}}}, nil},
		{"a mask outside the roots", subproc.Confinement{WritableRoots: []string{"/w"}, Masked: []subproc.Masked{{Path: "/h/.ssh", Dir: true}}}, nil},
		{"a mask at a root's top", subproc.Confinement{WritableRoots: []string{"/w"}, Masked: []subproc.Masked{{Path: "/w/.env"}}}, nil},
		{
			"nested masks share their ancestors",
			subproc.Confinement{WritableRoots: []string{"/w"}, Masked: []subproc.Masked{{Path: "/w/a/b/.env"}, {Path: "/w/a/c/.env"}}},
			[]string{"/w/a", "/w/a/b", "/w/a/c"},
		},
		{
			"the deepest root holding it",
			subproc.Confinement{WritableRoots: []string{"/t", "/t/x/ws"}, Masked: []subproc.Masked{{Path: "/t/x/ws/backend/.env"}, {Path: "/t/y/k.pem"}}},
			[]string{"/t/y", "/t/x/ws/backend"},
		},
		{
			"full access: up to the root",
			subproc.Confinement{WritableRoots: []string{"/"}, FullAccess: true, Masked: []subproc.Masked{{Path: "/var/tmp/h/.config/gh", Dir: true}, {Path: "/proc/x/y"}}},
			[]string{"/var", "/var/tmp", "/var/tmp/h", "/var/tmp/h/.config"},
		},
		{
			"not beneath a protected path",
			subproc.Confinement{WritableRoots: []string{"/w"}, Protected: []subproc.Protected{{Path: "/w/.git"}}, Masked: []subproc.Masked{{Path: "/w/.git/x/.env"}}},
			nil,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, subproc.MaskAncestors(&c.conf))
		})
	}
}

// TestBwrapPinsTheAncestorsOfMasks: a command can rename neither a masked
// path nor any directory between it and its writable root (a mount point
// in its view: EBUSY), in the workspace-writable view and the full-access
// one; what it can write there it still writes; the host's files stay at
// their paths with their bytes and mode.
func TestBwrapPinsTheAncestorsOfMasks(t *testing.T) {
	requireLandlock(t)
	for _, full := range []bool{false, true} {
		t.Run("full access "+strconv.FormatBool(full), func(t *testing.T) {
			ws, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			file := filepath.Join(ws, "a", "b", ".env")
			require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o700))
			require.NoError(t, os.WriteFile(file, []byte("SECRET-FILE"), 0o600))
			conf := subproc.Confinement{WritableRoots: []string{ws}, Masked: []subproc.Masked{{Path: file}}}
			if full {
				conf = subproc.Confinement{WritableRoots: []string{"/"}, FullAccess: true, Network: true, UnixSockets: true, Masked: conf.Masked}
			}
			out, stdout, stderr := runBwrap(t.Context(), t, subproc.Spec{
				Command: `mv a a2; echo $?; mv a/b a/b2; echo $?; mv a/b/.env a/b/e; echo $?; cat a2/b/.env a/b2/.env a/b/e; echo w > a/b/new && cat a/b/new`,
				Dir:     ws, Confine: &conf,
			}, time.Minute)
			require.True(t, out.Status.Started, out.Status.Error)
			assert.Equal(t, "1\n1\n1\nw\n", stdout, stderr)
			assert.Contains(t, stderr, "busy")
			assert.NotContains(t, stdout+stderr, "SECRET")
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, "SECRET-FILE", string(b))
			info, err := os.Stat(file)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
			assert.NoDirExists(t, filepath.Join(ws, "a2"))
			assert.NoDirExists(t, filepath.Join(ws, "a", "b2"))
		})
	}
}
