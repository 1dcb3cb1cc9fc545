package toolexec

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/exec"
)

// writableUnconfined reports whether the command's user (conf) could write
// p (an absolute canonical path) without the sandbox, so that a refusal on
// p is the sandbox's and not a plain permission problem: p's own mode when
// it exists (followed through a symlink), else the write and search bits
// of its nearest existing directory (creating needs both), read with the
// owner, group and other bits as the kernel picks them for conf's uid and
// gids; a capable command passes every mode. A path on a filesystem mounted
// read-only outside the sandbox is never writable. ACLs, the search bits of
// the ancestors and the sticky bit are not consulted: a cheap check from the
// server's view, which can misjudge a path they govern.
func writableUnconfined(conf *exec.Confinement, p string) bool {
	need := uint32(2) // w
	info, err := os.Stat(p)
	for dir := p; err != nil; {
		if dir == "/" {
			return false
		}
		dir = filepath.Dir(dir)
		info, err = os.Stat(dir)
		p, need = dir, 3 // w and x
	}
	var fs unix.Statfs_t
	if unix.Statfs(p, &fs) != nil || fs.Flags&unix.ST_RDONLY != 0 {
		return false
	}
	if conf.Capable {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	perm := uint32(info.Mode().Perm())
	switch {
	case st.Uid == conf.UID:
		perm >>= 6
	case slices.Contains(conf.GIDs, st.Gid):
		perm >>= 3
	}
	return perm&need == need
}
