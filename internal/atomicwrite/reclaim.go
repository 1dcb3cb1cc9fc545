package atomicwrite

import (
	"errors"
	"os"
	"regexp"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// stagingPattern matches the name of a staging directory:
// ".<base>.<pid>.<uuid>.tmpdir"; it captures the base and the pid.
var stagingPattern = regexp.MustCompile(`^\.(.+)\.([0-9]+)\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmpdir$`)

// tempLinkPattern matches the temporary name of an unnamed file between its
// link and its rename: ".<base>.<pid>.<uuid>.tmp"; it captures the pid.
var tempLinkPattern = regexp.MustCompile(`^\..+\.([0-9]+)\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$`)

// Reclaim removes the staging directories and the temporary names that
// writers killed mid-write left in p, and returns how many it removed. A
// temporary name is reclaimed under the same liveness rule: its process is
// not this one and is dead, and the file's flock (which a writer holds from
// before the link until after the rename) can be taken; it must be a regular
// file (opened without following a symlink) owned by this user with one
// link, else it stays. A staging directory is reclaimed
// only when it is certainly abandoned: the process named in it is not this
// one and is no longer alive, and its flock (which a writer holds from the
// moment it opens its staging directory until it has removed it) can be
// taken. A directory whose process is alive is left alone even if unlocked:
// its writer may be between mkdir and flock. A candidate must be exactly
// what a writer makes: a real directory (a symlink is never followed), mode
// 0700, owned by this user, holding nothing but its one temp file
// "<base>.tmp", a regular file or nothing; anything else makes it stay.
// Errors are the directory scan's; a staging directory that cannot be
// reclaimed is skipped.
func Reclaim(p *dirfd.Parent) (int, error) {
	names, err := p.Names()
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	removed := 0
	for _, name := range names {
		if m := tempLinkPattern.FindStringSubmatch(name); m != nil {
			if pid, err := strconv.Atoi(m[1]); err == nil && pid != self && !alive(pid) && reclaimTemp(p, name) == nil {
				removed++
			}
			continue
		}
		m := stagingPattern.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[2])
		if err != nil || pid == self || alive(pid) {
			continue
		}
		if reclaimOne(p, name, tempName(m[1])) == nil {
			removed++
		}
	}
	return removed, nil
}

// alive reports whether a process with pid exists (signal 0 probes it;
// EPERM means it exists but belongs to someone else).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// errNotStaging says a candidate holds something a writer never leaves.
var errNotStaging = errors.New("not an abandoned staging directory")

// reclaimOne removes one abandoned staging directory, under its flock,
// after checking it holds at most its temp file, a regular file.
func reclaimOne(p *dirfd.Parent, name, temp string) error {
	dir, err := p.OpenOwnDir(name)
	if err != nil {
		return err
	}
	defer dir.Close() //nolint:errcheck // read-only directory descriptor
	if err := unix.Flock(dir.FD(), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return err // a live writer holds it
	}
	entries, err := dir.Names()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e != temp {
			return errNotStaging
		}
		st, err := dir.Stat(e, false)
		if err != nil || !dirfd.IsRegular(&st) {
			return errNotStaging
		}
	}
	for _, e := range entries {
		if err := unix.Unlinkat(dir.FD(), e, 0); err != nil {
			return err
		}
	}
	return unix.Unlinkat(p.FD(), name, unix.AT_REMOVEDIR)
}

// reclaimTemp removes one abandoned temporary name, under the file's flock,
// after checking it is what a writer links: a regular file of this user with
// no other name.
func reclaimTemp(p *dirfd.Parent, name string) error {
	fd, err := p.Open(name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd) //nolint:errcheck // read-only descriptor
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if !dirfd.IsRegular(&st) || int(st.Uid) != os.Geteuid() || st.Nlink != 1 {
		return errNotStaging
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return err // a live writer holds it
	}
	return unix.Unlinkat(p.FD(), name, 0)
}
