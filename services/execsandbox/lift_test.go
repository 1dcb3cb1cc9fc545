//go:build linux

package execsandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/sandbox"
)

// countOf counts the occurrences of marker in s.
func countOf(s, marker string) int { return strings.Count(s, marker) }

// plantSecret writes content to path (making its directories, mode 0700),
// owned by o when the test runs as root.
func plantSecret(t *testing.T, o owner, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	if os.Geteuid() == 0 {
		for p := path; p != filepath.Dir(filepath.Dir(path)); p = filepath.Dir(p) {
			require.NoError(t, chownTo(p, o.uid))
		}
	}
}

// TestLiftedReadIsExactlyTheNamedPath (issue 24, review finding F5): an
// approval for ~/.netrc lifted the whole deny-read set, so the second line
// of `wc -c ~/.netrc<LF>cat $(echo ~/.s)sh/id_ed25519` printed the key.
// Now only the named paths become readable: the finding's exact input, a
// key named beneath ~/.ssh (its sibling, a key one directory down and
// ~/.aws stay masked), and one named two directories down.
func TestLiftedReadIsExactlyTheNamedPath(t *testing.T) {
	requireBwrapAndLandlock(t)
	o := primaryOwner()
	s, pol := newSecretHome(t, o)
	netrc := filepath.Join(s.home, ".netrc")
	netrcMark := "NETRCMARK-" + s.marker
	plantSecret(t, o, netrc, "machine a password "+netrcMark+"\n")
	sibling := filepath.Join(s.home, ".ssh", "id_rsa")
	plantSecret(t, o, sibling, "SIBLING-"+s.marker+"\n")
	deep := filepath.Join(s.home, ".ssh", "keys", "deploy")
	plantSecret(t, o, deep, "DEEP-"+s.marker+"\n")
	plantSecret(t, o, filepath.Join(s.home, ".ssh", "keys", "other"), "OTHER-"+s.marker+"\n")
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	catAll := "; cat " + s.key + " " + sibling + " " + deep + " " + filepath.Join(s.home, ".ssh", "keys", "other") + " " + s.aws + " " + s.env + " 2>&1; true"
	cases := []struct {
		name    string
		command string
		lifted  []string
		want    []string // markers that must come out, each once
	}{
		{"F5's input: approved for ~/.netrc", "wc -c " + netrc + "\ncat $(echo " + s.home + "/.s)sh/id_ed25519; cat " + netrc + catAll, []string{netrc}, []string{netrcMark}},
		{"a key beneath ~/.ssh", "cat " + s.key + catAll, []string{s.key}, []string{"-----BEGIN OPENSSH PRIVATE KEY-----\n" + s.marker}},
		{"a key two directories down", "cat " + deep + catAll, []string{deep}, []string{"DEEP-" + s.marker}},
		{"two keys of one directory", "true" + catAll, []string{s.key, sibling}, []string{"-----BEGIN OPENSSH PRIVATE KEY-----\n" + s.marker, "SIBLING-" + s.marker}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := r.Run(t.Context(), exec.Request{
				Command: c.command, Workdir: s.ws, Timeout: time.Minute,
				Policy: carried(pol, sandbox.DangerFullAccess, s.ws), LiftedReads: c.lifted,
			})
			require.NoError(t, err)
			out := res.Stdout.Text + res.Stderr.Text
			wanted := 0
			for _, m := range c.want {
				assert.Contains(t, out, m)
				wanted += countOf(out, m)
			}
			// Each marker that came out is one a wanted read holds:
			// nothing else was readable.
			assert.Equal(t, wanted, countOf(out, s.marker), "more came out than was approved: %s", out)
		})
	}
	// The directories on the way list their entries; the masked ones are
	// empty.
	res, err := r.Run(t.Context(), exec.Request{
		Command: "ls -A " + filepath.Dir(s.key) + "; stat -c '%s %a' " + sibling, Workdir: s.ws, Timeout: time.Minute,
		Policy: carried(pol, sandbox.DangerFullAccess, s.ws), LiftedReads: []string{s.key},
	})
	require.NoError(t, err)
	assert.Equal(t, "id_ed25519\nid_rsa\nkeys\n0 0\n", res.Stdout.Text, res.Stderr.Text)
	// Nothing changed on disk.
	for path, want := range map[string]string{sibling: "SIBLING-" + s.marker + "\n", deep: "DEEP-" + s.marker + "\n", netrc: "machine a password " + netrcMark + "\n"} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, want, string(b))
	}
}

// TestLiftedReadThatCannotBeExactIsRefused: a named path that is gone, was
// replaced by a symlink (to the sibling key) since the prompt, or is not a
// canonical path refuses the command (fail closed): it never runs with
// more, or all, of the deny-read set readable.
func TestLiftedReadThatCannotBeExactIsRefused(t *testing.T) {
	requireBwrapAndLandlock(t)
	o := primaryOwner()
	s, pol := newSecretHome(t, o)
	sibling := filepath.Join(s.home, ".ssh", "id_rsa")
	plantSecret(t, o, sibling, "SIBLING-"+s.marker+"\n")
	swapped := filepath.Join(s.home, ".ssh", "swapped")
	require.NoError(t, os.Symlink(sibling, swapped))
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	ran := filepath.Join(s.ws, "ran")
	for name, lifted := range map[string]string{
		"gone":          filepath.Join(s.home, ".ssh", "gone"),
		"now a symlink": swapped,
		"not canonical": s.home + "/.ssh/../.ssh/id_ed25519",
		"relative":      ".ssh/id_ed25519",
	} {
		t.Run(name, func(t *testing.T) {
			res, err := r.Run(t.Context(), exec.Request{
				Command: "touch " + ran + "; cat " + swapped + " " + s.key, Workdir: s.ws, Timeout: time.Minute,
				Policy: carried(pol, sandbox.DangerFullAccess, s.ws), LiftedReads: []string{lifted},
			})
			var ee *exec.Error
			require.True(t, errors.As(err, &ee), "%v %s", err, res.Stdout.Text)
			assert.Equal(t, exec.CodeUnavailable, ee.Code)
			assert.Contains(t, ee.Message, "cannot be lifted exactly")
			assert.NotContains(t, res.Stdout.Text, s.marker)
			assert.NoFileExists(t, ran, "the command ran")
		})
	}
}

// TestLiftedDirectoryIsItsListingOnly (issue 35): approving a command that
// named ~/.ssh made every key beneath it readable (`head ~/.ssh/*`). A
// lifted directory (named with a trailing slash, as the prompt shows it)
// now makes its listing readable and nothing it holds: each entry stays
// masked (a file an empty file of mode 0000, a directory empty) unless
// named itself. A lifted path whose kind is not the one named (a
// directory named as a file, the form that lifted the whole tree; a file
// named as a directory) refuses the command.
func TestLiftedDirectoryIsItsListingOnly(t *testing.T) {
	requireBwrapAndLandlock(t)
	o := primaryOwner()
	s, pol := newSecretHome(t, o)
	ssh := filepath.Dir(s.key)
	sibling := filepath.Join(ssh, "id_rsa")
	plantSecret(t, o, sibling, "SIBLING-"+s.marker+"\n")
	keys := filepath.Join(ssh, "keys")
	plantSecret(t, o, filepath.Join(keys, "deploy"), "DEEP-"+s.marker+"\n")
	r, err := execsandbox.New(execsandbox.Config{}, exec.Config{}, pol)
	require.NoError(t, err)
	heads := "; head " + ssh + "/* " + keys + "/* 2>&1; true"
	cases := []struct {
		name    string
		command string
		lifted  []string
		listing string   // what the command's ls prints first
		want    []string // markers that must come out, each once
	}{
		{"~/.ssh/ named", "ls -A " + ssh + heads, []string{ssh + "/"}, "id_ed25519\nid_rsa\nkeys\n", nil},
		{"~/.ssh/ and one key in it named", "ls -A " + ssh + heads, []string{ssh + "/", sibling}, "id_ed25519\nid_rsa\nkeys\n", []string{"SIBLING-" + s.marker}},
		{"one key, then ~/.ssh/ named", "ls -A " + ssh + heads, []string{sibling, ssh + "/"}, "id_ed25519\nid_rsa\nkeys\n", []string{"SIBLING-" + s.marker}},
		{"a directory beneath ~/.ssh named", "ls -A " + keys + heads, []string{keys + "/"}, "deploy\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := r.Run(t.Context(), exec.Request{
				Command: c.command, Workdir: s.ws, Timeout: time.Minute,
				Policy: carried(pol, sandbox.DangerFullAccess, s.ws), LiftedReads: c.lifted,
			})
			require.NoError(t, err)
			out := res.Stdout.Text + res.Stderr.Text
			assert.True(t, strings.HasPrefix(res.Stdout.Text, c.listing), "the listing: %s", out)
			wanted := 0
			for _, m := range c.want {
				assert.Contains(t, out, m)
				wanted += countOf(out, m)
			}
			assert.Equal(t, wanted, countOf(out, s.marker), "more came out than was approved: %s", out)
		})
	}
	ran := filepath.Join(s.ws, "ran")
	for name, lifted := range map[string]string{
		"a directory named as a file": ssh,
		"a file named as a directory": s.key + "/",
	} {
		t.Run(name, func(t *testing.T) {
			res, err := r.Run(t.Context(), exec.Request{
				Command: "touch " + ran + heads, Workdir: s.ws, Timeout: time.Minute,
				Policy: carried(pol, sandbox.DangerFullAccess, s.ws), LiftedReads: []string{lifted},
			})
			var ee *exec.Error
			require.True(t, errors.As(err, &ee), "%v %s", err, res.Stdout.Text)
			assert.Equal(t, exec.CodeUnavailable, ee.Code)
			assert.Contains(t, ee.Message, "cannot be lifted exactly")
			assert.NotContains(t, res.Stdout.Text, s.marker)
			assert.NoFileExists(t, ran, "the command ran")
		})
	}
	// Nothing changed on disk.
	b, err := os.ReadFile(sibling)
	require.NoError(t, err)
	assert.Equal(t, "SIBLING-"+s.marker+"\n", string(b))
}
