package toolexec

import (
	"os"
	"path/filepath"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fsuser"
	"github.com/dsh-go/harness/services/exec"
)

// writableUnconfined reports whether the command's user (conf) could write
// p (an absolute canonical path) without the sandbox, so that a refusal on
// p is the sandbox's and not a plain permission problem: p's own write
// permission when it exists (followed through a symlink), else write and
// search on its nearest existing directory (creating needs both), decided
// for conf's uid and gids by fsuser.Account.May (the mode bits and the
// POSIX access ACL, as the kernel reads them); a capable command passes
// every mode. A path on a filesystem mounted read-only outside the sandbox
// is never writable. The search bits of the ancestors and the sticky bit
// are not consulted: a check from the server's view, which can misjudge a
// path they govern.
func writableUnconfined(conf *exec.Confinement, p string) bool {
	need := fsuser.Write
	_, err := os.Stat(p)
	for dir := p; err != nil; {
		if dir == "/" {
			return false
		}
		dir = filepath.Dir(dir)
		_, err = os.Stat(dir)
		p, need = dir, fsuser.Write|fsuser.Search
	}
	if ro, err := dirfd.ReadOnlyMount(p); err != nil || ro {
		return false
	}
	if conf.Capable {
		return true
	}
	ok, err := fsuser.Account{UID: conf.UID, GIDs: conf.GIDs}.May(p, need, true)
	return err == nil && ok
}
