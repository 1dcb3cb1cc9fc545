package execsandbox

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckUnixSocket returns nil when path, a --unix-socket value, is absolute
// and clean and names a Unix socket now (symlinks followed), else an error
// saying which of these it is not (fs.ErrNotExist wrapped for a missing
// one).
func CheckUnixSocket(path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("%q is not an absolute, clean path", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%q: %w; start the socket's server (such as ssh-agent) before harness, or leave the path out", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%q is not a Unix socket (it is a %s)", path, kind(fi.Mode()))
	}
	return nil
}

// kind names a file type for an error.
func kind(m os.FileMode) string {
	switch m.Type() {
	case 0:
		return "regular file"
	case os.ModeDir:
		return "directory"
	case os.ModeNamedPipe:
		return "FIFO"
	case os.ModeDevice, os.ModeDevice | os.ModeCharDevice:
		return "device"
	default:
		return "file of another kind"
	}
}
