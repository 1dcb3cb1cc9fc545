package execsandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Git state that runs programs (issue 35). Under --vcs commit a command may
// write a repository's rebase-merge/ and sequencer/ (git rebase,
// cherry-pick and revert run inside the sandbox need them), so it could
// leave there what the user's `git rebase --continue` on the host runs
// unconfined: an `exec` line, a merge strategy program. The runner lists
// those files (sandbox.GitRunStates) in every git directory of the view
// before the command starts and again, searching the writable roots afresh,
// when it ends, and disarms each one the command created or changed whose
// content runs a program: a todo's exec lines become comments, a strategy
// file is removed, a symlink or special file where git reads one is
// removed. Each is reported in exec.Confinement.Disarmed.

// gitStateMaxBytes bounds the bytes of one state file read for the check;
// a larger file the command created or changed is removed unread.
const gitStateMaxBytes = 4 << 20

// gitStateWalkMax bounds the directories walked below one git directory's
// modules/ and worktrees/; those past it are not checked, and the report
// says so.
const gitStateWalkMax = 4096

// gitStateSearchTimeout bounds the search for git directories after a
// command, whose own deadline may have passed.
const gitStateSearchTimeout = 30 * time.Second

// gitStateEntry is one state file found, or the symlink or special file
// met where git reads one.
type gitStateEntry struct {
	state sandbox.GitRunState
	// other marks a symlink (on the way or at the file) or a file that is
	// neither regular nor a directory: git would read what was not checked.
	other bool
	key   stateKey
}

// stateKey is one version of an entry as lstat shows it: a command cannot
// set the change time, so a rewrite shows.
type stateKey struct {
	dev, ino, size uint64
	mode           uint32
	mtime, ctime   unix.Timespec
}

// gitStates is the state files of the git directories dirs (with their
// linked worktrees' and submodules' gitdirs), by absolute path; short says
// the walk of a git directory stopped at gitStateWalkMax.
type gitStates struct {
	files map[string]gitStateEntry
	short bool
}

// gitDirsOf returns the git directories among found: the split ones
// (--vcs commit), and each other directory found that holds a HEAD file (a
// `.git` protected whole under --vcs read-only, which a command may have
// made below the top while it ran).
func gitDirsOf(found []sandboxpolicy.ProtectedEntry) []string {
	var out []string
	for _, e := range found {
		var st unix.Stat_t
		if e.Split || (e.Dir && !e.Missing && unix.Lstat(filepath.Join(e.Path, "HEAD"), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG) {
			out = append(out, e.Path)
		}
	}
	return out
}

// listGitStates lists the state files of dirs.
func listGitStates(dirs []string) gitStates {
	g := gitStates{files: map[string]gitStateEntry{}}
	for _, d := range dirs {
		// Each git directory's own bound: one a command filled (sorting
		// first) leaves the others checked in full.
		budget := gitStateWalkMax
		g.gitDir(d, &budget)
		g.short = g.short || budget <= 0
	}
	return g
}

// gitDir lists the state files of the git directory dir, then those of each
// gitdir below its worktrees/ and modules/ (a submodule's name may hold
// slashes, so every directory below modules/ is looked at, but a
// repository's objects, refs and logs).
func (g *gitStates) gitDir(dir string, budget *int) {
	for _, s := range sandbox.GitRunStates() {
		g.state(dir, s)
	}
	for _, sub := range []string{"worktrees", "modules"} {
		g.below(filepath.Join(dir, sub), sub == "modules", budget)
	}
}

// below looks at each real directory in dir as a git directory (gitDir),
// and, when deep, walks on below it.
func (g *gitStates) below(dir string, deep bool, budget *int) {
	names, err := readDirNoFollow(dir)
	if err != nil {
		return
	}
	for _, n := range names {
		if *budget <= 0 {
			return
		}
		p := filepath.Join(dir, n)
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		*budget--
		g.gitDir(p, budget)
		if deep {
			for _, skip := range []string{"objects", "refs", "logs", "worktrees", "modules", "hooks", "info", "rebase-merge", "rebase-apply", "sequencer", "lfs"} {
				if n == skip {
					p = ""
				}
			}
			if p != "" {
				g.below(p, true, budget)
			}
		}
	}
}

// state records s in dir when it exists: the file, or the first symlink on
// the way to it, or a special file in its place.
func (g *gitStates) state(dir string, s sandbox.GitRunState) {
	p := dir
	parts := strings.Split(s.Path, "/")
	for i, part := range parts {
		p = filepath.Join(p, part)
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return
		}
		key := stateKey{dev: st.Dev, ino: st.Ino, size: uint64(st.Size), mode: st.Mode, mtime: st.Mtim, ctime: st.Ctim}
		switch t := st.Mode & unix.S_IFMT; {
		case t == unix.S_IFLNK, i == len(parts)-1 && t != unix.S_IFREG && t != unix.S_IFDIR:
			g.files[p] = gitStateEntry{state: s, other: true, key: key}
			return
		case i == len(parts)-1 && t == unix.S_IFREG:
			g.files[p] = gitStateEntry{state: s, key: key}
		case t != unix.S_IFDIR:
			return
		}
	}
}

// readDirNoFollow returns the names in dir, opened without following any
// symlink.
func readDirNoFollow(dir string) ([]string, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), dir)
	defer func() { _ = f.Close() }()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// gitStateCheck is the check of one command's start: the state files
// before it, and how to search the writable roots after it.
type gitStateCheck struct {
	before gitStates
	dirs   []string
	links  []protectedLink // restoreLinks
	search func(context.Context) ([]sandboxpolicy.ProtectedEntry, error)
}

// disarm searches the writable roots again, disarms each git directory
// found then and not before (disarmNewRepo), lists the state files of every
// git directory found then or before, and disarms each that is not as it
// was before and runs a program (sandbox.GitRunState.Arms), returning what
// it did. A directory of the server's user that the search cannot enter is
// opened up for it and given back its mode after
// (searchThroughUnreadable). A search that does not finish leaves the
// directories found before checked, and says so.
func (c *gitStateCheck) disarm(ctx context.Context) (out []exec.DisarmedState) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gitStateSearchTimeout)
	defer cancel()
	dirs := slices.Clone(c.dirs)
	out = restoreLinks(c.links)
	found, opened, err := searchThroughUnreadable(ctx, c.search)
	defer func() { out = append(out, restore(opened)...) }()
	if err != nil {
		out = append(out, exec.DisarmedState{Action: fmt.Sprintf(
			"the search for git directories after the command did not finish (%v): only those found before it were checked", err)})
	}
	var made []string
	for _, d := range gitDirsOf(found) {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
			made = append(made, d)
		}
	}
	for _, d := range made {
		// A git directory the command made (newrepo_linux.go).
		out = append(out, disarmNewRepo(ctx, d, dirs)...)
	}
	after := listGitStates(dirs)
	if after.short {
		out = append(out, exec.DisarmedState{Action: fmt.Sprintf(
			"more than %d directories below the git directories' worktrees/ and modules/: those past them were not checked", gitStateWalkMax)})
	}
	paths := make([]string, 0, len(after.files))
	for p := range after.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		e := after.files[p]
		if prev, ok := c.before.files[p]; ok && prev.key == e.key && prev.other == e.other {
			continue
		}
		if d, ok := disarmOne(p, e); ok {
			out = append(out, d)
		}
	}
	return out
}

// disarmOne disarms the state entry e at p when it runs a program, and
// reports it; ok is false when it runs none.
func disarmOne(p string, e gitStateEntry) (exec.DisarmedState, bool) {
	d := exec.DisarmedState{Path: p, Runs: e.state.Runs}
	if e.other {
		d.Found = "a symlink or special file where git reads " + e.state.Path
		d.Action = removeNoFollow(p)
		return d, true
	}
	content, err := readNoFollow(p)
	if err != nil {
		d.Found = "a file that could not be checked (" + err.Error() + ")"
		d.Action = removeNoFollow(p)
		return d, true
	}
	found, arms := e.state.Arms(content)
	if !arms {
		return exec.DisarmedState{}, false
	}
	if len(found) > 200 {
		found = found[:200]
	}
	d.Found = found
	if clean, ok := e.state.Disarm(content); ok {
		if err := rewriteNoFollow(p, clean); err != nil {
			d.Action = "could not make its exec lines comments (" + err.Error() + "); " + removeNoFollow(p)
		} else {
			d.Action = "its exec lines were made comments"
		}
		return d, true
	}
	d.Action = removeNoFollow(p)
	return d, true
}

// openParent opens p's directory without following a symlink anywhere on
// its path, for an *at call on p's last name.
func openParent(p string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, filepath.Dir(p), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// removeNoFollow removes the entry p (not what a symlink there names) and
// says so.
func removeNoFollow(p string) string {
	dfd, err := openParent(p)
	if err == nil {
		err = unix.Unlinkat(dfd, filepath.Base(p), 0)
		_ = unix.Close(dfd)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return "could not remove it: " + err.Error()
	}
	return "removed"
}

// readNoFollow reads the regular file p, following no symlink and opening
// nothing that could block; more than gitStateMaxBytes is an error.
func readNoFollow(p string) ([]byte, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, gitStateMaxBytes+1))
	if err == nil && len(b) > gitStateMaxBytes {
		err = fmt.Errorf("larger than %d bytes", gitStateMaxBytes)
	}
	return b, err
}

// rewriteNoFollow replaces the regular file p with content: a new file of
// the same mode and owner beside it, renamed over it, so a hard link the
// command made to p elsewhere is not written through.
func rewriteNoFollow(p string, content []byte) error {
	dfd, err := openParent(p)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(dfd) }()
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, filepath.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("not a regular file")
	}
	tmp := filepath.Base(p) + ".harness-disarm"
	_ = unix.Unlinkat(dfd, tmp, 0)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, st.Mode&0o777)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = f.Chown(int(st.Uid), int(st.Gid))
	if errors.Is(err, syscall.EPERM) && int(st.Uid) == os.Geteuid() {
		err = nil // a group this user is not in: the file keeps the user's own
	}
	if err == nil {
		err = f.Chmod(os.FileMode(st.Mode & 0o777))
	}
	if err == nil {
		_, err = f.Write(content)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, filepath.Base(p))
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
	}
	return err
}
