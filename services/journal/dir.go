package journal

import (
	"os"
	"os/user"
	"path/filepath"
)

// DefaultMaxBytes is the default cap of a journal: 1 GiB.
const DefaultMaxBytes int64 = 1 << 30

// DefaultDir returns the journal's default directory, "journal" in
// harness's state directory: $XDG_STATE_HOME/harness when that is an
// absolute path, else ~/.local/state/harness ($HOME when absolute, else the
// password database's home). Errors are *Error with CodeFailed (no home).
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "harness", "journal"), nil
	}
	home := os.Getenv("HOME")
	if !filepath.IsAbs(home) {
		u, err := user.Current()
		if err != nil || !filepath.IsAbs(u.HomeDir) {
			return "", newErr(CodeFailed, "open", err, "no state directory: neither $XDG_STATE_HOME nor a home directory is set")
		}
		home = u.HomeDir
	}
	return filepath.Join(home, ".local", "state", "harness", "journal"), nil
}
