package toolexec

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/services/exec"
)

// wholeGitNote is the note a failed command's result gets when git
// directories were read-only whole in its view (exec.Confinement.
// WholeGitDirs: a workspace of many repositories) and its stderr names a
// path in one or a read-only file system, and whether it does: which
// repository, why, and what to do (run it with its workdir in that
// repository, where its git directory is writable but for its hooks and
// configuration, as everywhere under --vcs commit). The path is quoted
// (strconv.Quote): a directory's name may hold a newline and a line that
// reads like the sandbox's own (the review's prompt spoofing).
func wholeGitNote(conf *exec.Confinement, stderr string) (string, bool) {
	if conf == nil || len(conf.WholeGitDirs) == 0 {
		return "", false
	}
	named := ""
	for _, g := range conf.WholeGitDirs {
		if strings.Contains(stderr, g+"/") || strings.Contains(stderr, g+"'") || strings.Contains(stderr, g+"\"") {
			named = g
			break
		}
	}
	if named == "" && !strings.Contains(stderr, "Read-only file system") {
		return "", false
	}
	which := strconv.Itoa(len(conf.WholeGitDirs)) + " repositories not holding the command's workdir"
	if named != "" {
		which = "the repository " + strconv.Quote(filepath.Dir(named)) + " (and " + strconv.Itoa(len(conf.WholeGitDirs)-1) + " more not holding the command's workdir)"
	}
	return "[sandbox: git directories read-only whole]\n(the workspace holds too many repositories to bind each one's hooks and configuration read-only apart: " +
		"the git directory of " + which + " was read-only whole in this command, so git could not write there. " +
		"To commit, fetch or switch branches in one, run the command with its workdir in that repository)", true
}
