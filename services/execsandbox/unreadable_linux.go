package execsandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// A command may leave a directory its own user cannot read or search
// (`mkdir locked; chmod 000 locked`). The search for git directories after
// it then fails for a server of that user (root reads through it), and a
// repository the command made beside it would keep what runs a program:
// the review's input left a core.fsmonitor that the host's git ran. The
// search is tried again with each directory it could not enter opened up
// to its owner (u+rx) when the server's user owns it, at most
// maxOpenedUp of them; each gets its mode back once the disarming is done.

// maxOpenedUp bounds the directories one search after a command opens up.
const maxOpenedUp = 64

// openedUp is a directory whose mode was widened for the search: held by
// a descriptor (O_PATH, reached through no symlink), so its mode goes back to the
// directory opened whatever is at its path by then.
type openedUp struct {
	fd   int
	mode uint32
}

// searchThroughUnreadable runs search, and again after opening up each
// directory of the server's user that it could not open (the one its
// error names, or that one's parent: a directory readable but not
// searchable fails on its entries). It returns the last result and the
// directories opened up, whose modes restore gives back.
func searchThroughUnreadable(ctx context.Context, search func(context.Context) ([]sandboxpolicy.ProtectedEntry, error)) ([]sandboxpolicy.ProtectedEntry, []openedUp, error) {
	var opened []openedUp
	found, err := search(ctx)
	for err != nil && len(opened) < maxOpenedUp {
		var pe *os.PathError
		if !errors.As(err, &pe) || !errors.Is(pe.Err, unix.EACCES) {
			break
		}
		n := len(opened)
		for _, d := range []string{pe.Path, filepath.Dir(pe.Path)} {
			if o, ok := openUp(d); ok {
				opened = append(opened, o)
				break
			}
		}
		if len(opened) == n {
			break // nothing of ours to open up: the error stands
		}
		found, err = search(ctx)
	}
	return found, opened, err
}

// openUp gives the directory at p, when the server's user owns it and
// cannot both read and search it, those rights (u+rx), reporting its old
// mode.
func openUp(p string) (openedUp, bool) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return openedUp{}, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o500 == 0o500 {
		_ = unix.Close(fd)
		return openedUp{}, false
	}
	mode := st.Mode & 0o7777
	if unix.Chmod(procFD(fd), mode|0o500) != nil {
		_ = unix.Close(fd)
		return openedUp{}, false
	}
	return openedUp{fd: fd, mode: mode}, true
}

// restore gives each directory opened up its mode back, the last opened
// first, and reports each that kept the wider one.
func restore(opened []openedUp) []exec.DisarmedState {
	var out []exec.DisarmedState
	for i := len(opened) - 1; i >= 0; i-- {
		o := opened[i]
		if err := unix.Chmod(procFD(o.fd), o.mode); err != nil {
			path, _ := os.Readlink(procFD(o.fd))
			out = append(out, exec.DisarmedState{Path: path, Action: "opened to search it for git directories after the command; its mode could not be given back: " + err.Error()})
		}
		_ = unix.Close(o.fd)
	}
	return out
}

// procFD names the file open at fd through /proc, for the calls that take
// no descriptor.
func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }
