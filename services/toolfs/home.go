package toolfs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/services/guard"
)

// expandHome replaces a leading "~" or "~/" in the path argument name with
// the process user's home directory, $HOME (spec difference 13); the
// backend's fence then decides whether the call may touch it. "~user" and a
// "~" without an absolute home are refused with a hint, never taken as a
// name in the working directory: a literal "~" directory invites a later
// "rm -rf ~".
func expandHome(name, path string) (string, error) {
	rest, ok := strings.CutPrefix(path, "~")
	if !ok {
		return path, nil
	}
	if rest != "" && rest[0] != '/' {
		user, _, _ := strings.Cut(rest, "/")
		return "", guard.BadArg(name + " " + strconv.Quote(path) + " names the home directory of user " + strconv.Quote(user) +
			", which is not expanded; give an absolute path, or ./" + path + " for a file of that name in the working directory")
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", guard.BadArg(name + " " + strconv.Quote(path) +
			" starts with ~ but the server has no home directory (HOME is not set to an absolute path); give an absolute path")
	}
	if expanded := strings.TrimRight(home, "/") + rest; expanded != "" {
		return expanded, nil
	}
	return "/", nil
}
