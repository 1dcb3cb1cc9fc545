//go:build linux

package subproc_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestConfinedReadsHideDenyReadPaths runs commands whose Landlock domain
// hides deny-read paths (Confinement.ReadDenied, the Landlock isolation's
// answer to ~/.ssh and harness's own state, issue 36): their contents stay
// unread by every route tried, everything else stays readable, and what a
// command writes in its writable root it reads back.
func TestConfinedReadsHideDenyReadPaths(t *testing.T) {
	requireLandlock(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	const marker = "KEYMARK-readrules"
	home := filepath.Join(base, "home")
	key := filepath.Join(home, ".ssh", "id_ed25519")
	state := filepath.Join(home, ".local", "state", "harness", "audit.jsonl")
	proj := filepath.Join(home, "proj")
	for _, d := range []string{filepath.Dir(key), filepath.Dir(state), proj, filepath.Join(home, ".local", "share")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for p, body := range map[string]string{
		key:                            marker + "\n",
		state:                          marker + "\n",
		filepath.Join(home, ".bashrc"): "rc\n",
		filepath.Join(home, ".local", "share", "f"): "shared\n",
		filepath.Join(proj, "main.go"):              "package main\n",
	} {
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	require.NoError(t, os.Symlink(key, filepath.Join(home, "link")))
	require.NoError(t, os.Symlink(filepath.Dir(key), filepath.Join(proj, "dirlink")))
	denied := []string{filepath.Dir(key), filepath.Dir(state)}

	cases := []struct {
		name, command string
		ok            bool
		want          string
	}{
		{"the key", "cat " + key, false, ""},
		{"the state", "cat " + state, false, ""},
		{"a symlink to the key", "cat " + filepath.Join(home, "link"), false, ""},
		{"a symlinked directory in the root", "cat " + filepath.Join(proj, "dirlink", "id_ed25519"), false, ""},
		{"through /proc/self/root", "cat /proc/self/root" + key, false, ""},
		{"a copy of the directory", "cp -r " + filepath.Dir(key) + " " + filepath.Join(proj, "copy"), false, ""},
		{"a hard link into the root", "ln " + key + " " + filepath.Join(proj, "hard") + " && cat " + filepath.Join(proj, "hard"), false, ""},
		{"a sibling file", "cat " + filepath.Join(home, ".bashrc"), true, "rc\n"},
		{"a sibling beside the state", "cat " + filepath.Join(home, ".local", "share", "f"), true, "shared\n"},
		{"the root's file", "cat " + filepath.Join(proj, "main.go"), true, "package main\n"},
		{"a file the command writes", "echo new > " + filepath.Join(proj, "new") + " && cat " + filepath.Join(proj, "new"), true, "new\n"},
		{"listing the home", "ls -A " + home + " | grep -c ssh", true, "1\n"},
		{"system files and devices", "head -c 3 /dev/zero | wc -c && grep -c root /etc/passwd >/dev/null && echo ok", true, "3\nok\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stdout, stderr := run(t.Context(), t, subproc.Spec{
				Command: c.command, Dir: proj, Confine: &subproc.Confinement{WritableRoots: []string{proj}, ReadDenied: denied},
			})
			require.True(t, out.Status.Started, out.Status.Error)
			assert.NotContains(t, stdout+stderr, marker)
			if c.ok {
				assert.Equal(t, 0, out.Status.ExitCode, stderr)
				assert.Equal(t, c.want, stdout)
				return
			}
			assert.NotEqual(t, 0, out.Status.ExitCode, stdout)
			assert.Regexp(t, `Permission denied|Invalid cross-device link`, stderr)
		})
	}
	for _, p := range []string{filepath.Join(proj, "hard"), filepath.Join(proj, "copy", "id_ed25519")} {
		if b, err := os.ReadFile(p); err == nil {
			assert.NotContains(t, string(b), marker, p)
		}
	}
	b, err := os.ReadFile(key)
	require.NoError(t, err)
	assert.Equal(t, marker+"\n", string(b))

	// A deny-read path inside a writable root cannot be hidden: the
	// command does not start.
	out, _, _ := run(t.Context(), t, subproc.Spec{
		Command: "cat " + key, Dir: home, Confine: &subproc.Confinement{WritableRoots: []string{home}, ReadDenied: denied},
	})
	assert.False(t, out.Status.Started)
	assert.Contains(t, out.Status.Error, "cannot be hidden by Landlock")
}

// BenchmarkConfinedReads measures one confined `true` through the helper
// with a writable root, without deny-read paths (reads not handled) and
// with the defaults' shape in a home of 200 entries (~/.ssh, ~/.aws,
// ~/.config/gh among 50 entries of ~/.config, ~/.local/state/harness):
// the cost of listing the directories on their way and of one Landlock
// rule per entry.
func BenchmarkConfinedReads(b *testing.B) {
	requireLandlock(b)
	base, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	home := filepath.Join(base, "home")
	proj := filepath.Join(home, "proj")
	var denied []string
	for _, d := range []string{".ssh", ".aws", ".config/gh", ".local/state/harness", "proj"} {
		require.NoError(b, os.MkdirAll(filepath.Join(home, d), 0o755))
		if d != "proj" {
			denied = append(denied, filepath.Join(home, d))
		}
	}
	for i := range 200 {
		require.NoError(b, os.WriteFile(filepath.Join(home, "f"+strconv.Itoa(i)), nil, 0o644))
	}
	for i := range 50 {
		require.NoError(b, os.Mkdir(filepath.Join(home, ".config", "d"+strconv.Itoa(i)), 0o755))
	}
	for _, c := range []struct {
		name   string
		denied []string
	}{{"nothing denied", nil}, {"home defaults", denied}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				out, err := subproc.Run(b.Context(), helperProgram(b), subproc.Spec{
					Command: "true", Dir: proj, Env: []string{"PATH=/usr/bin:/bin"},
					Confine: &subproc.Confinement{WritableRoots: []string{proj}, ReadDenied: c.denied},
				}, 0, 1<<20, subproc.Watch{})
				if err != nil || out.Status.ExitCode != 0 {
					b.Fatal(err, out.Status.Error)
				}
			}
		})
	}
}

// TestConfinedReadsPastALargeDirectory: a directory on a denied path's way
// with more entries than a command's rules may grant does not stop the
// command (issue 36 review: a principal could fill one to stop every
// other's commands); what it holds is unreadable to it (fail closed).
func TestConfinedReadsPastALargeDirectory(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	big := filepath.Join(base, "big")
	require.NoError(t, os.Mkdir(big, 0o755))
	for i := range 1<<14 + 1 {
		require.NoError(t, os.WriteFile(filepath.Join(big, "f"+strconv.Itoa(i)), []byte("x"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(big, ".env"), []byte("SECRET\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "beside"), []byte("beside\n"), 0o644))
	out, stdout, stderr := run(t.Context(), t, subproc.Spec{
		Command: "cat " + filepath.Join(base, "beside") + "; cat " + filepath.Join(big, "f7") + " " + filepath.Join(big, ".env") + "; echo ran",
		Dir:     base, Confine: &subproc.Confinement{ReadDenied: []string{filepath.Join(big, ".env")}},
	})
	require.True(t, out.Status.Started, out.Status.Error)
	assert.Equal(t, "beside\nran\n", stdout)
	assert.Equal(t, 2, strings.Count(stderr, "Permission denied"), stderr)
}
