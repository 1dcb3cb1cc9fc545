package toolexec

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/exec"
)

// TestWholeGitNote: a failed command whose view had git directories
// read-only whole gets a note naming the repository its stderr names (or
// how many there were, for a read-only file system elsewhere), and what to
// do; none without such directories or without either in its stderr.
func TestWholeGitNote(t *testing.T) {
	whole := &exec.Confinement{WholeGitDirs: []string{"/src/a/.git", "/src/b/.git", "/src/c/.git"}}
	for _, tc := range []struct {
		name, stderr string
		conf         *exec.Confinement
		want         string // "" for no note
	}{
		{"git names the directory", "fatal: Unable to create '/src/b/.git/index.lock': Read-only file system\n", whole, "the repository /src/b (and 2 more"},
		{"a read-only file system elsewhere", "touch: cannot touch 'x': Read-only file system\n", whole, "3 repositories not holding"},
		{"another failure", "make: *** [all] Error 1\n", whole, ""},
		{"a prefix of another path", "cannot open /src/bb/.git/x: Read-only file system", whole, "3 repositories"},
		{"no whole git directory", "fatal: Unable to create '/src/b/.git/index.lock': Read-only file system\n", &exec.Confinement{}, ""},
		{"no confinement", "Read-only file system", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			note, ok := wholeGitNote(tc.conf, tc.stderr)
			assert.Equal(t, tc.want != "", ok, note)
			if ok {
				assert.Contains(t, note, "[sandbox: git directories read-only whole]")
				assert.Contains(t, note, tc.want)
				assert.Contains(t, note, "run the command with its workdir in that repository")
			}
		})
	}
}
