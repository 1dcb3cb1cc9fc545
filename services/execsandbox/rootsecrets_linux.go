package execsandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/dirwatch"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// systemDirs are where the host keeps root's own secrets (/etc/shadow,
// /etc/gshadow, /etc/sudoers, TLS and SSH host keys, /var/log, service
// state): walked for a command that runs as uid 0 (rootSecrets).
var systemDirs = []string{"/etc", "/boot", "/opt", "/srv", "/var", "/usr/local/etc"}

// Bounds of the walk of systemDirs: past maxSecretEntries entries read
// beneath one of them, each directory not yet read there is masked whole
// instead (fail closed: a container's /opt/conda of 300,000 files refused
// every command of a root server); more masked files in one directory mask
// the directory instead. Variables: a test sets a small bound on a fixture.
var (
	maxSecretEntries    = 200_000
	maxSecretFilesInDir = 64
)

// rootSecrets returns what a command of policy running as uid 0 (a root
// server's root-owned workspace: it owns root's files, without
// capabilities) must not read so that it reads no more of root's files than
// an ordinary user would: beneath systemDirs, on the same filesystem as
// each, every regular file uid 0 or a group of gids may read and others may
// not (mode bits; masked as a file), and every directory uid 0 or those
// groups may search and others may not (masked whole, not entered). A
// directory others may search is entered, its listing left readable. Not
// walked: temp areas every user writes (a sticky, world-writable directory
// such as /var/tmp: their entries come and go with other processes), the
// writable roots (what holds one is never masked whole), and
// the command's home (root's, read as any user reads their own home; the
// deny-read set covers its credentials; not when it is / or holds one of
// systemDirs), and other filesystems mounted
// beneath (a mount point is judged, not entered). A directory with more
// than maxSecretFilesInDir such files is masked whole instead (a log
// directory), unless it is one of systemDirs. Past maxSecretEntries
// entries read beneath one of systemDirs, each directory there not yet
// read is masked whole, unread (a uid-0 command then reads less than an
// ordinary user's share there, never more). Errors: *exec.Error with
// CodeUnavailable when the walk did not finish (deadline; past the bound,
// a directory that holds a writable root or the home, which cannot be
// masked, or one of systemDirs itself). With a non-nil set, every directory read is
// added to set before it is read; watched is false when one could not be
// (set nil, or dirwatch.Set.Add refused it), and every regular file and
// directory it judges before it is judged: a mode or owner changed through
// another path (another hard link, a mounted root, a bind mount's source)
// tells no watched directory, only the file itself.
func rootSecrets(ctx context.Context, policy sandbox.ExecutionPolicy, home string, gids []uint32, set *dirwatch.Set) (out []subproc.Masked, watched bool, err error) {
	roots := policy.Roots()
	if home == "/" || !filepath.IsAbs(home) || slices.ContainsFunc(systemDirs, func(top string) bool { return dirfd.Beneath(home, top) }) {
		home = "" // a home holding a system directory is not skipped
	}
	skip := func(p string) bool {
		return (home != "" && dirfd.Beneath(home, p)) || slices.ContainsFunc(roots, func(r string) bool { return dirfd.Beneath(r, p) })
	}
	holdsRoot := func(p string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return dirfd.Beneath(p, r) }) || (home != "" && dirfd.Beneath(p, home))
	}
	// secret reports whether uid 0 with gids reads (want 4) or searches
	// (want 1) what others may not.
	secret := func(st *syscall.Stat_t, want uint32) bool {
		perm := st.Mode & 0o777
		var mine uint32
		switch {
		case st.Uid == 0:
			mine = perm >> 6
		case slices.Contains(gids, st.Gid):
			mine = perm >> 3
		default:
			return false
		}
		return mine&want != 0 && perm&want == 0
	}
	w := secretWalk{ctx: ctx, skip: skip, holdsRoot: holdsRoot, secret: secret, set: set, watched: set != nil}
	for _, top := range systemDirs {
		if w.watched {
			// Where it would appear (a missing one made later, a symlink
			// replaced by a directory): its nearest existing ancestor.
			w.watched = watchAbove(set, top)
		}
		var st syscall.Stat_t
		if syscall.Lstat(top, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || skip(top) {
			continue
		}
		w.entries = 0 // each system directory's own bound
		if err := w.dir(top, st.Dev, true, false); err != nil {
			return nil, false, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
				"the search for root's own files a uid-0 command may not read did not finish: %v; the command was not run rather than run able to read them", err), Cause: err}
		}
	}
	return w.out, w.watched, nil
}

// watchAbove adds the nearest existing directory above top to set and
// reports whether it was added.
func watchAbove(set *dirwatch.Set, top string) bool {
	for p := filepath.Dir(top); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || p == "/" {
			return set.Add(p)
		}
	}
}

// secretWalk is one walk of rootSecrets.
type secretWalk struct {
	ctx       context.Context
	skip      func(string) bool
	holdsRoot func(string) bool
	secret    func(*syscall.Stat_t, uint32) bool
	entries   int
	out       []subproc.Masked
	// set, when not nil, watches each directory before it is read and
	// each entry before it is judged; watched stays true while every one
	// was added.
	set     *dirwatch.Set
	watched bool
}

// dir walks dir (on device dev), adding its secrets to w.out; top says it
// is one of systemDirs, added that its caller added it to w.set already
// (as an entry it judged).
func (w *secretWalk) dir(dir string, dev uint64, top, added bool) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.watched && !added {
		// Before the read: a change after it is reported, and so is the
		// directory's move if another takes its path before the read (its
		// parent's watch: the directory itself was watched before it was
		// judged, when its entry said it is one).
		w.watched = w.set.Add(dir)
	}
	if w.entries > maxSecretEntries {
		return w.maskUnread(dir, top)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return nil // gone, or unreadable to the command as well
	}
	if err != nil {
		return err
	}
	if w.entries += len(entries); w.entries > maxSecretEntries {
		return w.maskUnread(dir, top)
	}
	var files []subproc.Masked
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if w.skip(p) {
			continue
		}
		added := w.watched && (e.Type().IsRegular() || e.IsDir())
		if added {
			// Before it is judged: its mode or owner changed later, by any
			// path, is reported.
			w.watched = w.set.Add(p)
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			continue
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			if w.secret(&st, 4) {
				files = append(files, subproc.Masked{Path: p})
			}
		case syscall.S_IFDIR:
			switch {
			case st.Mode&(syscall.S_ISVTX|0o002) == syscall.S_ISVTX|0o002:
				// A temp area every user writes (/var/tmp): what is in it
				// comes and goes with other processes, as in /tmp; not
				// judged (not covered, as /tmp is not).
			case w.secret(&st, 1) && !w.holdsRoot(p):
				w.out = append(w.out, subproc.Masked{Path: p, Dir: true})
			case st.Dev != dev || (st.Mode&0o001 == 0 && !w.holdsRoot(p)):
				// Another filesystem, or a directory others may not
				// search that the command may not either.
			default:
				if err := w.dir(p, dev, false, added && e.IsDir()); err != nil {
					return err
				}
			}
		}
	}
	if len(files) > maxSecretFilesInDir && !top && !w.holdsRoot(dir) {
		w.out = append(w.out, subproc.Masked{Path: dir, Dir: true})
		return nil
	}
	w.out = append(w.out, files...)
	return nil
}

// maskUnread masks dir whole, unread, once the walk's bound is spent; a
// system directory itself, or one that holds a writable root or the home,
// cannot be: an error then.
func (w *secretWalk) maskUnread(dir string, top bool) error {
	if top || w.holdsRoot(dir) {
		return fmt.Errorf("more than %d entries beneath %s, which cannot be masked whole (a system directory, or one that holds a writable root or the home)", maxSecretEntries, dir)
	}
	w.out = append(w.out, subproc.Masked{Path: dir, Dir: true})
	return nil
}

// mergeMasks returns a and b as one list of masks, sorted by path, each
// path once (a directory mask wins over a file mask of the same path), none
// beneath a masked directory.
func mergeMasks(a, b []subproc.Masked) []subproc.Masked {
	all := slices.Concat(a, b)
	slices.SortFunc(all, func(x, y subproc.Masked) int {
		if c := cmp.Compare(x.Path, y.Path); c != 0 {
			return c
		}
		// The directory mask of a path first: it is the one kept.
		return cmp.Compare(boolRank(y.Dir), boolRank(x.Dir))
	})
	var out []subproc.Masked
	for _, m := range all {
		// A path masked twice (a root secret that is deny-read too) would
		// be bound twice, and the second bind fails the start.
		if slices.ContainsFunc(out, func(o subproc.Masked) bool {
			return o.Path == m.Path || (o.Dir && dirfd.Beneath(o.Path, m.Path))
		}) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// boolRank is 1 for true, 0 for false.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
