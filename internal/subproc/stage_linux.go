package subproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// stageMain is the inner stage of the bubblewrap isolation, run by bwrap as
// the sandbox's command with the spec on descriptor 3 and the status pipe on
// 4. It checks the view, restricts itself (rlimits, Landlock, seccomp),
// enters the workdir and execs `/bin/sh -c`, so the shell is the sandbox's
// command and bwrap's exit status is the shell's. On the status pipe it
// writes one status: Started just before the exec (the pipe then closes),
// or why nothing was started. It returns 125 when it could not exec.
func stageMain() int {
	// Everything bwrap passed on (the programs, the info pipe, the status
	// pipe) closes at the exec; the stage keeps only what it reads and
	// writes until then.
	_ = unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	f := os.NewFile(statusFD, "status")
	if f == nil {
		return 125
	}
	// Encoded before the limits are set, so reporting the start allocates
	// nothing under them.
	startedMsg, _ := json.Marshal(Status{Started: true})
	startedMsg = append(startedMsg, '\n')
	_ = json.NewEncoder(f).Encode(stage(func() {
		_, _ = f.Write(startedMsg)
	}))
	return 125
}

// stage confines itself and execs the command's shell, calling started just
// before; it returns only when the command could not be started, with why.
func stage(started func()) Status {
	f := os.NewFile(specFD, "spec")
	var spec Spec
	if f == nil || json.NewDecoder(f).Decode(&spec) != nil || spec.Confine == nil {
		return Status{Error: "the sandbox's stage could not read its spec"}
	}
	_ = f.Close()
	if err := checkView(spec.Confine); err != nil {
		// Fail closed: a view that is not what was asked for runs nothing.
		// The caller searches again and starts anew (Status.Changed).
		return Status{Error: err.Error(), Changed: true}
	}
	if spec.Terminal != nil {
		// Made from the view's own devpts, before Landlock.
		tty, err := makeTerminal(*spec.Terminal)
		if err == nil {
			err = takeTerminal(tty)
		}
		if err != nil {
			return Status{Error: err.Error()}
		}
	}
	c := *spec.Confine
	// The view's /dev/shm is a tmpfs private to the command, and its
	// /dev/pts the devpts instance of its own terminals.
	c.WritableRoots = append(c.WritableRoots, "/dev/shm", "/dev/pts")
	// bwrap masked every other socket the server found bound.
	c.socketsMasked = true
	if !c.Network {
		// bwrap gave the command a network namespace with loopback
		// only: its own, or its session's (Bwrap.Net).
		c.LoopbackOnly = true
	}
	if err := confine(c); err != nil {
		return Status{Error: err.Error()}
	}
	// Entered inside the finished view, so a workdir cannot be a way
	// around it.
	if err := os.Chdir(spec.Dir); err != nil {
		return Status{Error: "cannot enter the workdir: " + err.Error()}
	}
	// The limits come last: under a small memory or process cap the Go
	// runtime could not map or start what confining needs, and the stage
	// would fail instead of the command. From them to the exec the runtime
	// must need nothing more from the kernel: the exec's arguments are
	// made first, no collection runs (one under the caps, or the sweep
	// after one, could not map its own bookkeeping and would crash the
	// stage: the stage starts with GOGC=off, bwrap's environment, so none
	// ever ran), and the exec is the bare system call.
	execve, err := prepareExec(shell, []string{"sh", "-c", spec.Command}, spec.Env)
	if err != nil {
		return Status{Error: "cannot start " + shell + ": " + err.Error()}
	}
	nofile, restoreNofile := startedNofile()
	// GOGC=off already; this holds should the stage be started without
	// it. A full collection here (runtime.GC, which also finishes the
	// sweep) cost 1.5 ms of each command's start (issue 34).
	debug.SetGCPercent(-1)
	if err := setLimits(spec.Confine.Limits); err != nil {
		return Status{Error: err.Error()}
	}
	if restoreNofile {
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &nofile)
	}
	started()
	defaultSignals()
	err = execve()
	return Status{Error: "cannot start " + shell + ": " + err.Error()}
}

// startedNofile returns the descriptor limit the command is to start
// with: the soft limit of the stage's parent (bubblewrap, started with the
// server's own), under the stage's hard limit. The Go runtime raised the
// stage's soft limit to its hard one at start, and only syscall.Exec (not
// the bare exec here) would put it back; a command would otherwise start
// with a soft limit of the hard one (select(2) breaks past 1024, programs
// that close every descriptor up to the limit crawl). ok is false when the
// parent's cannot be read (the raised one then stays).
func startedNofile() (lim unix.Rlimit, ok bool) {
	var parent, own unix.Rlimit
	if unix.Prlimit(unix.Getppid(), unix.RLIMIT_NOFILE, nil, &parent) != nil || unix.Getrlimit(unix.RLIMIT_NOFILE, &own) != nil {
		return lim, false
	}
	if parent.Cur > own.Max {
		return lim, false
	}
	return unix.Rlimit{Cur: parent.Cur, Max: own.Max}, true
}

// prepareExec makes execve's arguments for path, argv and env, and returns
// the call that execs them: it allocates nothing and returns only the
// execve error when the exec fails.
func prepareExec(path string, argv, env []string) (func() error, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return nil, err
	}
	a, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return nil, err
	}
	e, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return nil, err
	}
	return func() error {
		_, _, errno := unix.RawSyscall(unix.SYS_EXECVE,
			uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&e[0])))
		return errno
	}, nil
}

// checkView verifies, inside the finished view, that every protected path
// lies on a read-only mount and is still the file that was found (device
// and inode, without following a final symlink), or, where a process
// outside put another file in its place inside the same git directory
// between the search and the bind (the host's git renaming its new
// `.git/config` over the old, some times a second: issue 34's "a change is
// not a failure"), that the git directory is still the one found and the
// file now there is reached through no symlink and lies on a read-only
// mount, as bubblewrap's read-only bind of the path makes it: what the
// command sees at the path is then read-only all the same. That every pinned directory
// is its own mount (checkPinned), that every masked path is its mask
// (checkMasks), and that every reserved path is a read-only mount
// of its kind; a protected or reserved path may instead be missing with its
// holder, removed (goneWithHolder). Each failure names a path that is not what the caller found
// (Status.Changed): removed, or replaced by another file since the search;
// or a path whose read-only mount a process outside took off it by renaming
// another file over it (the kernel detaches a mount from a dentry renamed
// over in another mount namespace; the new file, which may reuse the old
// one's inode number, is then what the view shows, writable).
func checkView(c *Confinement) error {
	for _, p := range c.Protected {
		err := checkReadOnly(p.Path, func(st *unix.Stat_t) bool {
			return uint64(st.Dev) == p.Dev && st.Ino == p.Ino //nolint:unconvert // Dev is uint64 on most arches only
		})
		if err != nil && !goneWithHolder(c, p.Path, p.Holder) && !replacedInGitDir(p) {
			return err
		}
	}
	if err := checkPinned(c); err != nil {
		return err
	}
	if err := checkMasks(c); err != nil {
		return err
	}
	for _, p := range c.Reserved {
		want := uint32(unix.S_IFREG)
		switch {
		case p.Dir:
			want = unix.S_IFDIR
		case p.FIFO:
			want = unix.S_IFIFO
		}
		if err := checkReadOnly(p.Path, func(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == want }); err != nil &&
			!goneWithHolder(c, p.Path, p.Holder) {
			return err
		}
	}
	return nil
}

// replacedInGitDir reports whether p's file, another than the one found,
// lies in the git directory found (inGitDirFound), reached through no
// symlink, on a read-only mount (replacedReadOnly).
func replacedInGitDir(p Protected) bool { return inGitDirFound(p) && replacedReadOnly(p.Path) }

// inGitDirFound reports whether p names the git directory it lies in
// (Protected.GitDir) and that directory, reached without following any
// symlink, is the one the search found: a file renamed over p inside it is
// the host's own rewrite. A directory above it renamed away, and another
// repository renamed into its place, is not (the attack review of
// ff9821f: the real config, moved aside with its project, would be on the
// writable mount); the start is then a change, searched again.
func inGitDirFound(p Protected) bool {
	if p.GitDir == "" {
		return false
	}
	st, err := dirfd.StatNoSymlinks(p.GitDir)
	return err == nil && uint64(st.Dev) == p.GitDirDev && st.Ino == p.GitDirIno //nolint:unconvert // Dev is uint64 on most arches only
}

// replacedReadOnly reports whether the file at path, reached without
// following any symlink (a symlink in place of a protected path, or of a
// directory holding it, would have led bubblewrap's bind elsewhere), lies
// on a read-only mount: another file than the one found, protected in the
// view as the one found would have been. A file renamed over the path
// after the bind is on the writable root's mount (the kernel detached the
// bind from the old file): not read-only, refused.
func replacedReadOnly(path string) bool {
	fd, err := dirfd.OpenNoSymlinks(path, dirfd.OPath|unix.O_NOFOLLOW)
	if err != nil {
		return false
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	var fs unix.Statfs_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK &&
		unix.Fstatfs(fd, &fs) == nil && fs.Flags&unix.ST_RDONLY != 0
}

// goneWithHolder reports whether path and its holder (Protected.Holder;
// "": none) are both missing from the view, and that holder, held since
// the search (Confinement.Held), was removed: a holder moved elsewhere
// carried path with it, writable at its new place, which the view does
// not protect (the attack review of ff9821f: a nested project's directory
// renamed aside between the search and the start).
func goneWithHolder(c *Confinement, path, holder string) bool {
	return holder != "" && missing(path) && missing(holder) && removedHolder(c, holder)
}

// missing reports whether nothing is at path, reached without following
// any symlink: a component is missing, or one that should hold it is not a
// directory (a symlink in the way is not missing: it is a change).
func missing(path string) bool {
	fd, err := dirfd.OpenNoSymlinks(path, dirfd.OPath|unix.O_NOFOLLOW)
	if err == nil {
		_ = unix.Close(fd)
	}
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// checkReadOnly checks that path, reached without a symlink anywhere on
// the way (bubblewrap's bind followed any: the bind would then cover what
// the link leads to, not the name found), is a file same accepts, on a
// read-only mount.
func checkReadOnly(path string, same func(*unix.Stat_t) bool) error {
	fd, err := dirfd.OpenNoSymlinks(path, dirfd.OPath|unix.O_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("the protected path %s changed before the command started: %w", path, err)
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || !same(&st) {
		return fmt.Errorf("the protected path %s changed before the command started; the command was not run", path)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return fmt.Errorf("cannot check the protected path %s: %w", path, err)
	}
	if fs.Flags&unix.ST_RDONLY == 0 {
		return fmt.Errorf("the protected path %s is not read-only in the command's view; the command was not run", path)
	}
	return nil
}

// setLimits applies l as rlimits (soft and hard).
func setLimits(l RLimits) error {
	for _, r := range []struct {
		res  int
		v    uint64
		name string
	}{{unix.RLIMIT_DATA, l.Data, "memory"}, {unix.RLIMIT_NPROC, l.Procs, "process"}} {
		if r.v == 0 {
			continue
		}
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: r.v, Max: r.v}); err != nil {
			return fmt.Errorf("cannot set the %s limit: %w", r.name, err)
		}
	}
	return nil
}
