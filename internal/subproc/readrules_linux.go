package subproc

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// readRights are the rights a Landlock domain handles when it hides
// deny-read paths (Confinement.ReadDenied): reading a file, listing a
// directory, executing a file.
const readRights = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSExecute)

// fileReadRights are the read rights a rule on a file that is not a
// directory may carry (the kernel refuses listing there).
const fileReadRights = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSExecute)

// maxReadRules bounds the rules addReadRules adds, in all, and
// maxDirRules those for one directory: the entries of the directories
// along the denied paths (a home of a few hundred entries costs that many,
// about 10 µs each). A directory with more entries, and those met once the
// total is spent (the deepest last), get no rule: what they hold is
// unreadable to the command (fail closed), which still runs, so no
// directory someone fills (another principal's workspace, whose `.env`
// files are denied too) can stop every command.
const (
	maxReadRules = 1 << 16
	maxDirRules  = 1 << 14
)

// ErrReadDeniedInRoot says a deny-read path lies at or beneath a writable
// root, or holds one: Landlock grants a writable root's reads whole, so it
// cannot hide a path inside one.
var ErrReadDeniedInRoot = errors.New("a deny-read path at, beneath or above a writable root cannot be hidden by Landlock")

// checkReadDenied returns ErrReadDeniedInRoot, naming the path, when a
// denied path is at or beneath one of roots or holds one, else nil.
func checkReadDenied(denied, roots []string) error {
	for _, d := range denied {
		for _, r := range roots {
			if dirfd.Beneath(r, d) || dirfd.Beneath(d, r) {
				return fmt.Errorf("%w: %s (writable root %s)", ErrReadDeniedInRoot, d, r)
			}
		}
	}
	return nil
}

// addReadRules adds to the Landlock ruleset the read grants that hide
// denied (canonical absolute paths) while leaving the rest of the
// filesystem readable: listing beneath `/` (a denied directory's names stay
// listable: Landlock's listing right covers a whole hierarchy, and the
// directories holding denied paths must list), and reading and executing
// beneath every entry of each directory on a denied path's way from `/`
// but the entries on such a way themselves. Entries are opened beneath
// their directory without following a symlink: a symlink gets no rule (what
// it leads to is granted where it lies), so one swapped in cannot carry a
// grant onto a denied path. A directory that cannot be listed grants
// nothing beneath it (fail closed). Not covered: entries made in those
// directories after the rules are made get no grant (they are unreadable to
// this command), nor do the entries of a directory too large to grant
// (maxReadRules). Errors: `/` cannot be opened, the kernel refuses a rule.
func addReadRules(ruleset int, denied []string) error {
	onWay := map[string]bool{}
	for _, d := range denied {
		for p := d; !onWay[p]; p = filepath.Dir(p) {
			onWay[p] = true
			if p == "/" {
				break
			}
		}
	}
	root, err := dirfd.OpenNoSymlinks("/", unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return &os.PathError{Op: "open", Path: "/", Err: err}
	}
	err = addRule(ruleset, root, landlock.AccessFSSet(ll.AccessFSReadDir))
	_ = unix.Close(root)
	if err != nil {
		return &os.PathError{Op: "landlock_add_rule", Path: "/", Err: err}
	}
	// /dev is granted by devices: never a block device, which reads a
	// disk past every path.
	onWay["/dev"] = true
	n := 0
	dirs := slices.SortedFunc(maps.Keys(onWay), func(a, b string) int { // shallow first
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), strings.Compare(a, b))
	})
	for _, dir := range dirs {
		if slices.Contains(denied, dir) {
			continue
		}
		added, err := grantEntries(ruleset, dir, onWay, dir == "/dev", maxReadRules-n)
		if err != nil {
			return err
		}
		n += added
	}
	return nil
}

// grantEntries adds a read rule for each entry of dir not in skip (by
// full path), symlinks left out, and returns how many it added. With
// devices (dir is /dev or beneath it), a block device gets no rule, and a
// directory holding one is granted entry by entry in turn. A directory of
// more than maxDirRules entries, or more than limit, gets none (see
// maxReadRules). Errors: the kernel refused a rule.
func grantEntries(ruleset int, dir string, skip map[string]bool, devices bool, limit int) (int, error) {
	fd, err := dirfd.OpenNoSymlinks(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return 0, nil // unlistable or gone: nothing granted beneath it
	}
	f := os.NewFile(uintptr(fd), dir)
	defer func() { _ = f.Close() }()
	names, _ := f.Readdirnames(-1) // what was listed before an error is granted
	if len(names) > min(limit, maxDirRules) {
		return 0, nil
	}
	n := 0
	for _, name := range names {
		if skip[filepath.Join(dir, name)] {
			continue
		}
		efd, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone
		}
		var st unix.Stat_t
		rights := fileReadRights
		if err := unix.Fstat(efd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK || devices && st.Mode&unix.S_IFMT == unix.S_IFBLK {
			_ = unix.Close(efd)
			continue
		} else if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			rights = readRights
			if devices && holdsBlockDevice(filepath.Join(dir, name)) {
				_ = unix.Close(efd)
				added, err := grantEntries(ruleset, filepath.Join(dir, name), skip, true, limit-n)
				n += added
				if err != nil {
					return n, err
				}
				continue
			}
		}
		if n++; n > limit {
			_ = unix.Close(efd)
			return n - 1, nil
		}
		err = addRule(ruleset, efd, rights)
		_ = unix.Close(efd)
		if err != nil {
			return n, &os.PathError{Op: "landlock_add_rule", Path: filepath.Join(dir, name), Err: err}
		}
	}
	return n, nil
}

// holdsBlockDevice reports whether the directory dir holds a block device
// (not followed through a symlink), or cannot be listed.
func holdsBlockDevice(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true
	}
	for _, e := range entries {
		if e.Type()&os.ModeDevice != 0 && e.Type()&os.ModeCharDevice == 0 {
			return true
		}
	}
	return false
}

// addRule adds a path-beneath rule granting rights beneath the file fd.
func addRule(ruleset, fd int, rights landlock.AccessFSSet) error {
	return ll.LandlockAddPathBeneathRule(ruleset, &ll.PathBeneathAttr{AllowedAccess: uint64(rights), ParentFd: fd}, 0)
}

// restrictReads enforces cfg with rules and, beside them, the read grants
// that hide denied (addReadRules), on every thread of the process, with
// no_new_privs set first (go-landlock's Restrict, with rules of its own
// added to the ruleset it makes).
func restrictReads(cfg landlock.Config, rules []landlock.Rule, denied []string) error {
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return errors.New("no Landlock ruleset was made for the deny-read paths")
	}
	defer func() { _ = unix.Close(fd) }()
	if err := addReadRules(fd, denied); err != nil {
		return err
	}
	if err := ll.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.AllThreadsLandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}
