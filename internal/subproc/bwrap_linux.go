package subproc

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/protectscan"
)

// Bwrap is the bubblewrap isolation: each command runs in a world built by
// bubblewrap (a read-only view of `/` with the writable roots bound
// read-write and the protected paths read-only, a fresh /dev and /proc, its
// own user, PID, IPC and UTS namespaces, loopback-only networking unless
// allowed (its own network namespace, or a NetNS shared with other
// commands), a new session, no capabilities), where the inner stage (the
// helper program again) adds Landlock, seccomp and rlimits and runs
// `/bin/sh -c`. Both executables are held open and run by descriptor.
// bwrap reads its options from a sealed memory file (--args): its command
// line, which every process of the sandbox can read at /proc/1/cmdline,
// names no path of the view.
type Bwrap struct {
	// Exe is the bwrap executable.
	Exe *Program
	// Stage is the binary run as the inner stage inside the view: one
	// whose main calls Main first when IsHelper(os.Args).
	Stage *Program
	// Credential, when set, is the user bwrap runs as (a root server runs
	// commands as the workspace owner); nil runs it as the server's user.
	Credential *syscall.Credential
	// Net, when set, is the loopback-only network namespace the command
	// joins (its session's, made by NewNetNS for Credential) instead of
	// one of its own; nil gives each command its own. Without
	// Confinement.Network only.
	Net *NetNS
}

// bwrapStage is the helper's second argument for the inner stage of the
// bubblewrap isolation.
const bwrapStage = "stage"

// Descriptors of bwrap and the inner stage, set up by RunBwrap: the spec
// and the status pipe are the stage's (specFD, statusFD); bwrap writes its
// info document to bwrapInfoFD; the two programs sit above. bwrap reads its
// arguments from bwrapArgsFD, above the nsenter descriptors (netEnterFD...,
// unused without a NetNS) and the terminal's socket (termFD, unused without
// a terminal), and below the masks' sources (maskFD...).
const (
	bwrapInfoFD  = 5
	bwrapStageFD = 6
	bwrapExeFD   = 7
	bwrapArgsFD  = termFD + 1
)

// bwrapArgs returns bwrap's options for confinement c, the contents of its
// arguments file (argsFile; the command is on bwrapArgv): the view (`/`
// read-only, or read-write under FullAccess; the deny-read masks last, see
// maskArgs), then the info descriptor. Writable roots missing at run time
// grant nothing (--bind-try); roots at or beneath /dev or /proc are not
// bound (the fresh ones stand). joined says bwrap starts inside a NetNS,
// which the command keeps instead of a network namespace of its own.
func bwrapArgs(c *Confinement, joined bool) []string {
	args := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--cap-drop", "ALL",
		rootBind(c), "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/dev/shm",
	}
	if !c.Network && !joined {
		args = append(args, "--unshare-net")
	}
	roots := slices.Clone(c.WritableRoots)
	// Parents before what they hold, so a nested root's bind is not
	// hidden by its parent's.
	slices.SortFunc(roots, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	for _, r := range roots {
		if dirfd.Beneath("/dev", r) || dirfd.Beneath("/proc", r) || r == "/" {
			continue
		}
		args = append(args, "--bind-try", r, r)
	}
	// Every directory between a root and a protected path becomes a mount
	// point of its own (bound onto itself, still writable), so renaming
	// it away, which would carry the read-only bind along and leave a
	// fresh directory in its place, fails with EBUSY.
	// So does every directory between a root and a root nested in it (a
	// workspace under a temp area): renaming it would carry the nested
	// root away from its path.
	// So does every directory between a writable root (or, under
	// FullAccess, `/`) and a masked path, pinned with its identity
	// (Confinement.Pinned): renaming it would carry the masked path away
	// from its mask. Parents first, so no bind hides another.
	self := ancestors(c.Protected, c.Reserved, roots)
	for _, p := range c.Pinned {
		if !slices.Contains(self, p.Path) {
			self = append(self, p.Path)
		}
	}
	slices.SortStableFunc(self, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	for _, a := range self {
		args = append(args, "--bind-try", a, a)
	}
	// A protected path that vanished since it was found is skipped here
	// and refused by the stage's check, unless its holder vanished too.
	for _, p := range c.Protected {
		args = append(args, "--ro-bind-try", p.Path, p.Path)
	}
	// A reserved directory whose holder may vanish is bound like a file:
	// the placeholder onto itself, skipped when gone (the stage then
	// checks its holder is gone too), where a tmpfs would need its mount
	// point made, in a parent that may be gone.
	for _, p := range c.Reserved {
		if p.Dir && p.Holder == "" {
			args = append(args, "--perms", "0555", "--tmpfs", p.Path, "--remount-ro", p.Path)
		} else {
			args = append(args, "--ro-bind-try", p.Path, p.Path)
		}
	}
	// The deny-read masks on top of every bind above: a denied path
	// inside a writable root or a protected path is masked too. Then the
	// socket masks and the named sockets, so a socket the deployment
	// names stays reachable even beneath a masked directory.
	args = append(args, maskArgs(c)...)
	args = append(args, socketArgs(c)...)
	return append(args, "--info-fd", strconv.Itoa(bwrapInfoFD))
}

// MaxBwrapArgs is how many arguments bubblewrap parses at most, its
// command line and its arguments file together (MAX_ARGS in bubblewrap
// 0.8's bubblewrap.c): past it, it refuses to start ("Exceeded maximum
// number of arguments 9000"), so a view of more binds cannot be made.
const MaxBwrapArgs = 9000

// BwrapArgCount returns how many arguments bubblewrap would parse for c's
// view (bwrapArgs and bwrapArgv; at most one more than it does in a joined
// network namespace), to compare with MaxBwrapArgs.
func BwrapArgCount(c *Confinement) int {
	return len(bwrapArgs(c, false)) + len(bwrapArgv(""))
}

// bwrapArgv is bwrap's command line, argv0 first: its options come from
// the arguments file at bwrapArgsFD (--args), and the inner stage is the
// command. It names only descriptors and fixed words, since every process
// of the sandbox can read it (/proc/1/cmdline is bwrap's init, a fork of
// bwrap). The command cannot move into the file: bubblewrap 0.8 stops
// reading a file's arguments at its `--` and takes the command from its
// command line (parse_args_recurse).
func bwrapArgv(argv0 string) []string {
	return []string{argv0, "--args", strconv.Itoa(bwrapArgsFD), "--", execPath(bwrapStageFD), HelperArg, bwrapStage}
}

// argsFile returns args as bubblewrap's arguments file (--args): a memory
// file holding each argument followed by a NUL, positioned at its start and
// sealed against any change (so nothing that reaches the descriptor, by
// /proc/PID/fd, rewrites the view before bwrap reads it). bwrap reads it to
// its end and closes it before it makes any namespace (bubblewrap.c, the
// --args case), so it never reaches the sandbox. A memory file, not a
// pipe: it holds arguments of any size before bwrap starts, where a pipe
// written first would block past its buffer. The caller closes it once
// bwrap has started. Errors: an argument holds a NUL (bwrap would read two
// arguments); the kernel refuses the memory file or its seals.
func argsFile(args []string) (*os.File, error) {
	var data []byte
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("bubblewrap's argument %q holds a NUL byte; the command was not run", a)
		}
		data = append(append(data, a...), 0)
	}
	f, err := sealedFile("bwrap-args", data)
	if err != nil {
		return nil, fmt.Errorf("bubblewrap's arguments file: %w", err)
	}
	return f, nil
}

// sealedFile returns a memory file holding data, sealed against any
// change, its offset at 0 (where bwrap starts reading). Errors: the kernel
// refuses the memory file or its seals.
func sealedFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_NOEXEC_SEAL)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3 there is no MFD_NOEXEC_SEAL.
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	// At offset 0, leaving the file's offset where bwrap starts reading.
	_, err = f.WriteAt(data, 0)
	if err == nil {
		// F_SEAL_FUTURE_WRITE rather than F_SEAL_WRITE (seal): nothing
		// maps the file, and it does not wait for the pages just
		// written to settle, which can take a moment on a busy machine.
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS,
			unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_FUTURE_WRITE)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// boundSocketMasks returns the masked sockets of c that get a mask of their
// own: all but those at or beneath /dev, /proc, or a reserved or deny-read
// directory masked by a tmpfs, and those a deny-read file mask hides
// already (hidden by the view's own mounts).
func boundSocketMasks(c *Confinement) []string {
	var out []string
	for _, p := range c.MaskedSockets {
		if dirfd.Beneath("/dev", p) || dirfd.Beneath("/proc", p) ||
			slices.ContainsFunc(c.Reserved, func(r Reserved) bool { return r.Dir && r.Holder == "" && dirfd.Beneath(r.Path, p) }) ||
			slices.ContainsFunc(c.Masked, func(m Masked) bool { return m.Path == p || m.Dir && dirfd.Beneath(m.Path, p) }) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// socketArgs returns bwrap's arguments for c's Unix sockets: /dev/null bound
// read-only over each masked socket (connect then fails with ECONNREFUSED),
// leaving out those at or beneath /dev, /proc, or a reserved or deny-read
// directory masked by a tmpfs, and those a deny-read file mask hides already
// (hidden by the view's own mounts); then each
// named socket bound read-only onto itself (or its SocketSources file onto
// it), after the masks, so it is reachable at its path beneath any of them
// (one missing at run time is skipped; beneath a masked directory its mount
// point is made in the mask, which is made read-only after); the exposed
// files (c.Exposed) are bound read-only into their masks the same way.
func socketArgs(c *Confinement) []string {
	var args []string
	for _, p := range boundSocketMasks(c) {
		args = append(args, "--ro-bind", "/dev/null", p)
	}
	for _, p := range c.Exposed {
		args = append(args, "--ro-bind-try", p, p)
	}
	for _, p := range c.UnixSocketPaths {
		args = append(args, "--ro-bind-try", cmp.Or(c.SocketSources[p], p), p)
	}
	// The masked directories that hold a named socket or an exposed file,
	// left writable by maskArgs for their mount points, become read-only
	// now.
	for _, m := range c.Masked {
		if m.Dir && len(namedBeneath(c, m.Path)) > 0 {
			args = append(args, "--remount-ro", m.Path)
		}
	}
	return args
}

// ancestors returns the directories strictly between each protected or
// reserved path, or each root nested in another root, and the deepest other
// root holding it, parents first, leaving out any at or beneath a protected
// path (a gitdir inside a protected .git).
func ancestors(protected []Protected, reserved []Reserved, roots []string) []string {
	seen := map[string]bool{}
	var out []string
	held := make([]string, 0, len(protected)+len(reserved)+len(roots))
	for _, p := range protected {
		held = append(held, p.Path)
	}
	for _, p := range reserved {
		held = append(held, p.Path)
	}
	held = append(held, roots...)
	for _, p := range held {
		root := ""
		for _, r := range roots {
			if r != p && dirfd.Beneath(r, p) && len(r) > len(root) {
				root = r
			}
		}
		if root == "" {
			continue
		}
		for a := filepath.Dir(p); a != root && dirfd.Beneath(root, a); a = filepath.Dir(a) {
			if seen[a] || slices.ContainsFunc(protected, func(q Protected) bool { return dirfd.Beneath(q.Path, a) }) {
				continue
			}
			seen[a] = true
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	return out
}

// Reservation is one command's hold on a reserved path: a placeholder (an
// empty directory of mode 0555, an empty regular file of mode 0444, or a
// named pipe of mode 0400 with no writer) that is the mount point of the
// command's read-only tmpfs (a directory) or read-only bind (a file, a
// pipe), held with a shared flock of it for as long as the command runs,
// by every command of every harness process that reserves it.
type Reservation struct {
	// Path is the reserved path.
	Path string
	// Dir tells a directory placeholder from a file one; FIFO, a named
	// pipe one (ReserveEither).
	Dir, FIFO bool
	content   string // a file placeholder's
	fd        int
	// id is the placeholder's identity (device, inode, change time) and
	// dir that of the directory holding it, both as reserved: a removal
	// takes only that entry, through that directory.
	id, dir fileIdentity
}

// fileIdentity tells one file from another: its device and inode, and,
// against an inode number used again, its change time.
type fileIdentity struct {
	dev, ino  uint64
	ctimeSec  int64
	ctimeNsec int64
}

// identityOf is st's identity.
func identityOf(st *unix.Stat_t) fileIdentity {
	return fileIdentity{dev: st.Dev, ino: st.Ino, ctimeSec: st.Ctim.Sec, ctimeNsec: st.Ctim.Nsec}
}

// matches reports whether st is the file id names: the same device and
// inode, and the same change time unless id has none (zero: a placeholder
// the janitor knows from before its rename, which moves the change time).
func (id fileIdentity) matches(st *unix.Stat_t) bool {
	return st.Dev == id.dev && st.Ino == id.ino &&
		(id.ctimeSec == 0 && id.ctimeNsec == 0 || st.Ctim.Sec == id.ctimeSec && st.Ctim.Nsec == id.ctimeNsec)
}

// kind is r's placeholder's kind.
func (r *Reservation) kind() kind {
	switch {
	case r.Dir:
		return kindDir
	case r.FIFO:
		return kindFIFO
	}
	return kindFile
}

// kind is a placeholder's type.
type kind int

const (
	kindFile kind = iota
	kindDir
	kindFIFO
)

// Placeholder modes: a reserved path's empty directory or file has exactly
// this mode, and carries placeholderXattr, which together tell it from an
// empty one of the user's (a user's empty 0555 `.vscode` is never removed).
// A named pipe placeholder has its own mode, one link and no mark (a pipe
// takes no user extended attribute).
const (
	placeholderDirMode  = protectscan.PlaceholderDirMode
	placeholderFileMode = protectscan.PlaceholderFileMode
	placeholderFIFOMode = protectscan.PlaceholderFIFOMode
)

// placeholderXattr marks the placeholders the runner makes. On a file
// system without user extended attributes (ENOTSUP) the mode alone tells
// them, as it did before the mark.
const placeholderXattr = protectscan.PlaceholderXattr

// Reserve reserves path (clean, absolute; its parent must exist) for one
// command when it is missing (it makes the placeholder: an empty directory
// when dir, else an empty file) or is already a placeholder (another
// command's reservation, or one left by a server that died), and returns
// the reservation; nil without an error when something else is there
// (protected by the search instead), or its parent is missing or cannot be
// written (so neither can the command). An error (contention that did not
// settle, an unexpected failure) means the command must not run: it fails
// closed. Release it once the command has ended (ReleaseAll).
func Reserve(path string, dir bool) (*Reservation, error) {
	k := kindFile
	if dir {
		k = kindDir
	}
	return reserve(path, k, "", false)
}

// ReserveEither is Reserve of a name that an empty directory or a named
// pipe can hold (protectscan.PlaceholderFIFOName, a root's `.git`): a
// missing one gets an empty directory when dir, else a named pipe of mode
// 0400, which git passes over on its way up as it does a directory, and
// which Go's version-control stamping, unlike a directory, does not take
// for a repository; a placeholder of the other type already there (another
// command's, whose caller chose the other) is reserved as it is
// (Reservation.Dir and FIFO say which). Reserve of the other type would
// take it for something real and hold nothing, and its removal at the
// other command's end would free the name under this one.
func ReserveEither(path string, dir bool) (*Reservation, error) {
	k := kindFIFO
	if dir {
		k = kindDir
	}
	return reserve(path, k, "", true)
}

// ReserveFile is Reserve of a file whose placeholder holds content (at most
// a few bytes: a `commondir` naming its own directory, "."), for a name
// whose empty file would mean something else to its reader.
func ReserveFile(path, content string) (*Reservation, error) {
	return reserve(path, kindFile, content, false)
}

// errAgain says a placeholder went between its making and its hold: a
// reservation tries again.
var errAgain = errors.New("the placeholder went")

// reserve reserves path with a placeholder of kind want; when either, one
// of the other kind of ReserveEither (otherKind) is taken as it is, looked
// for again on each try: two commands choosing different kinds may make
// theirs at the same moment.
func reserve(path string, want kind, content string, either bool) (*Reservation, error) {
	for range 100 {
		k := want
		var pre, dirSt unix.Stat_t // dirSt: the directory's, when a placeholder was made
		exists := unix.Lstat(path, &pre) == nil
		if exists {
			switch {
			case placeholderMode(&pre, k):
			case either && placeholderMode(&pre, otherKind(k)):
				k = otherKind(k) // the other kind's placeholder: held as it is
			default:
				return nil, nil // something real: not even opened
			}
		} else if err := makePlaceholder(path, k, content, &dirSt); err != nil && !errors.Is(err, unix.EEXIST) {
			// Joining a placeholder there needs no write access to its
			// directory; making one does.
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				return nil, unwritableParent(path, err)
			}
			if errors.Is(err, unix.EROFS) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return nil, nil
			}
			return nil, fmt.Errorf("reserving %s: %w", path, err)
		}
		r, seen, err := hold(path, k, content, &dirSt)
		if errors.Is(err, errAgain) {
			continue // removed by a release meanwhile: again
		}
		if err != nil {
			return nil, fmt.Errorf("reserving %s: %w", path, err)
		}
		if r != nil {
			janitorReserved(r)
			return r, nil
		}
		if !again(path, seen, k, either) {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("reserving %s: other commands kept removing and remaking it", path)
}

// again reports, after hold found something at path that is not a
// placeholder of kind k (seen: its stat, when it could be opened), whether
// to try again: it went, or another command's placeholder took its place
// between the lstat and the hold (of either kind, when either), or it is
// itself the other kind's placeholder. Only an entry that stayed as it was
// is something real: a reservation that held nothing while a placeholder
// sits there would run its command with the name free once that
// placeholder's holders release it.
func again(path string, seen *unix.Stat_t, k kind, either bool) bool {
	var now unix.Stat_t
	if unix.Lstat(path, &now) != nil {
		return true
	}
	shaped := placeholderMode(&now, k) || either && placeholderMode(&now, otherKind(k))
	if seen != nil && seen.Ino == now.Ino && seen.Dev == now.Dev {
		return either && placeholderMode(&now, otherKind(k))
	}
	return shaped
}

// unwritableParent is the error of a placeholder that could not be made
// (err: EACCES or EPERM): nil, so the path needs no reservation, when the
// directory holding it is not the server's user's (a command cannot make
// it writable either); otherwise an error, for a command of that user may
// have taken the write or search bit off its own directory to keep the
// next one from reserving, and can put it back (chmod u+wx) once it runs.
func unwritableParent(path string, err error) error {
	var st unix.Stat_t
	if unix.Stat(filepath.Dir(path), &st) != nil || int(st.Uid) != os.Geteuid() {
		return nil
	}
	return fmt.Errorf("reserving %s: %w: the directory holding it is this server's user's but that user may not write or search it, "+
		"and a command could change that again (chmod u+wx %s to run commands there)", path, err, filepath.Dir(path))
}

// otherKind is the kind ReserveEither takes instead of k.
func otherKind(k kind) kind {
	if k == kindDir {
		return kindFIFO
	}
	return kindDir
}

// hold takes the shared hold on the placeholder of kind k at path: nil
// when what is there is something else (seen: its stat, when it was
// opened); errAgain when it went meanwhile.
func hold(path string, k kind, content string, dir *unix.Stat_t) (r *Reservation, seen *unix.Stat_t, err error) {
	fd, err := openHeld(path, k == kindDir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil, errAgain
		}
		var at unix.Stat_t
		if errors.Is(err, unix.EACCES) {
			if unix.Lstat(path, &at) != nil {
				return nil, nil, errAgain
			}
			if placeholderMode(&at, k) {
				// A placeholder this server's user may not open (another
				// user's pipe, whose mode lets no one else open it):
				// held by commands that would remove it under this one,
				// and not something real to protect.
				return nil, nil, fmt.Errorf("%w: it looks like the placeholder of a command of uid %d, which this server's user cannot hold; "+
					"the command can run once that one has ended (or, if no harness of that user runs, once it is removed)", err, at.Uid)
			}
		}
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENXIO) {
			return nil, nil, nil // something real
		}
		return nil, nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, nil, err
	}
	if !placeholder(fd, &st, k, content) {
		_ = unix.Close(fd)
		return nil, &st, nil // a real one: the search protects it
	}
	if err := flockShared(fd); err != nil {
		_ = unix.Close(fd)
		return nil, nil, err
	}
	// Still the placeholder at path (a release may have removed it
	// between the open and the lock): else again.
	var now unix.Stat_t
	if unix.Lstat(path, &now) == nil && now.Ino == st.Ino && now.Dev == st.Dev && (dir.Ino != 0 || unix.Stat(filepath.Dir(path), dir) == nil) {
		r = newReservation(path, k, content)
		r.fd, r.id, r.dir = fd, identityOf(&now), identityOf(dir)
		return r, nil, nil
	}
	_ = unix.Close(fd)
	return nil, nil, errAgain
}

// makePlaceholder makes the placeholder of kind k at path (an empty
// directory, a file holding content, a named pipe) whole, or fails with
// EEXIST when something is there: it is made under a temporary name beside
// path, marked (placeholderXattr: setting it needs write access, so before
// the mode; not a pipe, which takes none), given its mode, whatever the
// umask, then renamed to path without replacing anything. No other command
// ever sees it half made.
func makePlaceholder(path string, k kind, content string, dir *unix.Stat_t) error {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), protectscan.PlaceholderTempPrefix+hex.EncodeToString(rnd[:]))
	remove := func() { _ = unix.Unlink(tmp) }
	mode := uint32(placeholderFileMode)
	var fd int
	var err error
	switch k {
	case kindDir:
		if err = unix.Mkdir(tmp, 0o700); err != nil {
			return err
		}
		remove = func() { _ = unix.Rmdir(tmp) }
		mode = placeholderDirMode
		fd, err = unix.Open(tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	case kindFIFO:
		// Opened without waiting for a writer; what is at tmp by then is
		// checked to be a pipe before its mode is set.
		if err = unix.Mkfifo(tmp, 0o600); err != nil {
			return err
		}
		mode = placeholderFIFOMode
		fd, err = unix.Open(tmp, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	default:
		fd, err = unix.Open(tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	}
	if err != nil {
		remove()
		return err
	}
	// The janitor hears of it before anything else happens to it: a
	// server that dies from here on leaves nothing (it finds it under
	// either name).
	var made unix.Stat_t
	if err := unix.Fstat(fd, &made); err != nil || unix.Stat(filepath.Dir(path), dir) != nil {
		_ = unix.Close(fd)
		remove()
		return cmp.Or(err, fmt.Errorf("the placeholder's directory went: %w", unix.ENOENT))
	}
	janitorMaking(tmp, path, k, content, &made, dir)
	if testHookMade != nil {
		testHookMade("temporary")
	}
	err = func() error {
		defer func() { _ = unix.Close(fd) }()
		if k == kindFIFO {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return err
			}
			if st.Mode&unix.S_IFMT != unix.S_IFIFO {
				return fmt.Errorf("the placeholder's temporary name was replaced: %w", unix.EEXIST)
			}
			return unix.Fchmod(fd, mode)
		}
		if content != "" {
			if n, err := unix.Write(fd, []byte(content)); err != nil || n != len(content) {
				return fmt.Errorf("writing the placeholder: %w", cmp.Or(err, error(unix.EIO)))
			}
		}
		if err := unix.Fsetxattr(fd, placeholderXattr, []byte("1"), 0); err != nil && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("marking the placeholder: %w", err)
		}
		return unix.Fchmod(fd, mode)
	}()
	if err == nil {
		err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		remove()
	}
	if testHookMade != nil {
		testHookMade("renamed")
	}
	return err
}

// testHookMade, when set (tests), runs as a placeholder is made: once
// under its temporary name, then once renamed, before it is held.
var testHookMade func(stage string)

// placeholder reports whether fd (stat st) is a reservation's placeholder
// of kind k: an empty directory of mode 0555, a regular file of mode 0444
// holding exactly content, marked with placeholderXattr where the file
// system keeps user extended attributes; a named pipe of mode 0400 with
// one link.
func placeholder(fd int, st *unix.Stat_t, k kind, content string) bool {
	if !placeholderMode(st, k) {
		return false
	}
	switch k {
	case kindFIFO:
		return st.Nlink == 1
	case kindDir:
		return marked(fd) && emptyDir(fd)
	}
	if !marked(fd) || st.Size != int64(len(content)) {
		return false
	}
	if content == "" {
		return true
	}
	buf := make([]byte, len(content))
	n, err := unix.Pread(fd, buf, 0)
	return err == nil && n == len(content) && string(buf) == content
}

// marked reports whether fd carries placeholderXattr, or lives on a file
// system without user extended attributes.
func marked(fd int) bool {
	buf := make([]byte, 8)
	n, err := unix.Fgetxattr(fd, placeholderXattr, buf)
	if errors.Is(err, unix.ENOTSUP) {
		return true
	}
	return err == nil && string(buf[:n]) == "1"
}

// placeholderMode reports whether st has the type and mode of a
// placeholder of kind k.
func placeholderMode(st *unix.Stat_t, k kind) bool {
	switch k {
	case kindDir:
		return st.Mode == unix.S_IFDIR|placeholderDirMode
	case kindFIFO:
		return st.Mode == unix.S_IFIFO|placeholderFIFOMode
	}
	return st.Mode == unix.S_IFREG|placeholderFileMode
}

// ReleaseAll ends the holds of rs (nil ones skipped) and removes each
// placeholder no other command of any process holds (an exclusive flock
// succeeds) that is still the empty one reserved. Removing it only then
// matters: a placeholder removed while it is another command's mount point
// takes that command's mount with it. Each hold is dropped before the
// exclusive flock is tried, on a descriptor of its own: two commands
// ending together would otherwise each see the other's shared lock, and
// neither would remove it.
//
// A child this process forks holds a copy of every descriptor, the holds'
// among them, from its fork until its exec closes the close-on-exec ones:
// a bubblewrap, git or probe started for another call at that moment
// would keep a lock, and the placeholder would stay in the user's tree for
// good. The holds are closed under syscall.ForkLock (a fork holds it until
// its child is made: no later child copies them), and the locks still held
// are tried again, all together, releaseTries times over some 15 ms (the
// earlier children close their copies at their exec), and those still held
// then for half a second more in the background (lateReleaseTries). Together: a command
// that ends while another holds its placeholders (a background command of
// the same workspace) waits those 15 ms once, not once per placeholder
// (about 50 of them: 260 ms a command).
func ReleaseAll(rs ...*Reservation) {
	syscall.ForkLock.RLock()
	for _, r := range rs {
		if r != nil {
			_ = unix.Close(r.fd)
		}
	}
	syscall.ForkLock.RUnlock()
	var pending []openPlaceholder
	for _, r := range rs {
		if r == nil {
			continue
		}
		if fd, err := r.open(); err == nil {
			pending = append(pending, openPlaceholder{r, fd})
		} // else gone (another release removed it) or replaced
	}
	var removed []string
	late := removeUnlocked(pending, releaseTries, time.Millisecond, true, func(r *Reservation, ok bool) {
		if ok {
			removed = append(removed, r.Path)
		}
	})
	janitorReleased(removed)
	if len(late) == 0 {
		return
	}
	// Still held after some 15 ms: by another command (whose release
	// removes it), or by a child forked before this release that has not
	// reached its exec yet (at load 13 on two cores that took longer).
	// Tried on for half a second more, not on the caller's time.
	lateReleases.Go(func() {
		var removed []string
		removeUnlocked(late, lateReleaseTries, 16*time.Millisecond, false, func(r *Reservation, ok bool) {
			if ok {
				removed = append(removed, r.Path)
			}
		})
		janitorReleased(removed)
	})
}

// lateReleases are the releases still trying locks after ReleaseAll
// returned.
var lateReleases sync.WaitGroup

// openPlaceholder is a reservation's placeholder, open at fd.
type openPlaceholder struct {
	r  *Reservation
	fd int
}

// open opens r's placeholder at r.Path for its lock, without following a
// symlink or waiting for a pipe's writer.
func (r *Reservation) open() (int, error) { return openHeld(r.Path, r.Dir) }

// openHeld opens the placeholder at path (a directory when dir) as a hold
// or a release does: read-only, not following a symlink, not waiting for a
// pipe's writer.
func openHeld(path string, dir bool) (int, error) {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	if dir {
		flags |= unix.O_DIRECTORY
	}
	return unix.Open(path, flags, 0)
}

// newReservation is the reservation of path by a placeholder of kind k
// holding content, not yet open (fd -1) nor identified.
func newReservation(path string, k kind, content string) *Reservation {
	return &Reservation{Path: path, Dir: k == kindDir, FIFO: k == kindFIFO, content: content, fd: -1}
}

// removeUnlocked removes each of pending (removeHeld) once its exclusive
// lock is free, trying the locks still held all together, tries times in
// all, first, 2*first, 4*first, ... apart (a forked child's copy of a hold
// goes at its exec); at the last try it removes each that is free then,
// and either returns those still held, open (keep), or leaves them to
// their last holder. done hears of each it decided, and whether it was
// removed; each descriptor it does not return is closed.
func removeUnlocked(pending []openPlaceholder, tries int, first time.Duration, keep bool, done func(r *Reservation, removed bool)) []openPlaceholder {
	dirs := dirFDs{}
	defer dirs.close()
	wait := first
	for try := 1; len(pending) > 0; try++ {
		still := pending[:0]
		for _, p := range pending {
			if unix.Flock(p.fd, unix.LOCK_EX|unix.LOCK_NB) != nil && (try < tries || keep) {
				still = append(still, p)
				continue
			}
			done(p.r, p.r.removeHeld(p.fd, dirs))
			_ = unix.Close(p.fd)
		}
		pending = still
		if try >= tries {
			return pending
		}
		if len(pending) > 0 {
			time.Sleep(wait)
			wait *= 2
		}
	}
	return nil
}

// Current reports whether r's placeholder is still the entry at r.Path:
// the same file, not removed (by whoever could: the directory's owner, a
// process outside) nor put in another place by a rename of a directory
// above it. A holder that keeps a reservation beyond one command asks
// before each.
func (r *Reservation) Current() bool {
	var held, at unix.Stat_t
	return unix.Fstat(r.fd, &held) == nil && held.Nlink > 0 &&
		unix.Lstat(r.Path, &at) == nil && at.Ino == held.Ino && at.Dev == held.Dev
}

// releaseTries is how many times ReleaseAll tries the exclusive locks of
// the placeholders still held, all together, 1, 2, 4 and 8 ms apart,
// before it returns; lateReleaseTries how many times more it tries those
// still held then, 16 to 256 ms apart (half a second), in the background:
// a child forked before the release keeps its copy of a hold until its
// exec, which at load 13 on two cores came after the first 15 ms
// (TestReleaseBesideForks left a placeholder in the user's tree). The
// common release takes every lock at its first try.
const (
	releaseTries     = 5
	lateReleaseTries = 6
)

// removeHeld removes r's placeholder, open at fd, when fd holds its
// exclusive lock and it is still the placeholder reserved (its identity),
// at r.Path in the directory it was reserved in (removeIn), and reports
// whether it did. A directory placeholder someone filled meanwhile (a root
// server's write tool, or root on the host, writing `.config/x` into a
// reserved `.config`: the mode does not stop root) is given up instead
// (adopt): it is theirs now.
func (r *Reservation) removeHeld(fd int, dirs dirFDs) bool {
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // another command holds it: the last one removes it
	}
	var now unix.Stat_t
	if unix.Fstat(fd, &now) != nil || now.Dev != r.id.dev || now.Ino != r.id.ino {
		return false
	}
	if !r.id.matches(&now) || !placeholder(fd, &now, r.kind(), r.content) {
		// Filling a directory changes its change time too.
		if r.Dir && placeholderMode(&now, kindDir) && marked(fd) && !emptyDir(fd) {
			adopt(fd)
		}
		return false
	}
	return r.removeIn(dirs)
}

// adopt makes the directory placeholder open at fd, which is not empty, an
// ordinary directory: its mark removed, its mode 0755 (left as it is, it
// would stay read-only for good, and the next command would take it for a
// placeholder again). The mode first: a user extended attribute of a
// read-only inode cannot be removed but by root; with the mode changed the
// mark alone makes no placeholder.
func adopt(fd int) {
	if unix.Fchmod(fd, 0o755) == nil {
		_ = unix.Fremovexattr(fd, placeholderXattr)
	}
}

// dirFDs are directories opened by path for removals, shared by those of
// one release (a command's placeholders are mostly in one directory).
type dirFDs map[string]int

// open returns a descriptor of the directory at path (-1: none), opened
// once.
func (d dirFDs) open(path string) int {
	if fd, ok := d[path]; ok {
		return fd
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		fd = -1
	}
	d[path] = fd
	return fd
}

// close closes them all.
func (d dirFDs) close() {
	for _, fd := range d {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
}

// removeIn removes the entry named r.Path through the directory that
// path names, when that directory is still the one r was reserved in
// and the entry still r's placeholder, and reports whether it did: a
// directory above it renamed or swapped for a symlink since (by a user
// who owns one) makes the path lead elsewhere, and a removal by path
// would take what lies there.
func (r *Reservation) removeIn(dirs dirFDs) bool {
	dfd := dirs.open(filepath.Dir(r.Path))
	if dfd < 0 {
		return false
	}
	var dir, at unix.Stat_t
	if unix.Fstat(dfd, &dir) != nil || dir.Dev != r.dir.dev || dir.Ino != r.dir.ino {
		return false
	}
	name := filepath.Base(r.Path)
	if unix.Fstatat(dfd, name, &at, unix.AT_SYMLINK_NOFOLLOW) != nil || !r.id.matches(&at) {
		return false
	}
	flags := 0
	if r.Dir {
		flags = unix.AT_REMOVEDIR
	}
	return unix.Unlinkat(dfd, name, flags) == nil
}

// flockShared takes a shared flock on fd, waiting up to a second for an
// exclusive holder (a release, which holds it only to remove the
// directory).
func flockShared(fd int) error {
	var err error
	for range 100 {
		if err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// emptyDir reports whether the directory fd holds nothing but "." and "..".
func emptyDir(fd int) bool { return onlyEntries(fd, nil) }

// RunBwrap runs spec (spec.Confine required) in bubblewrap with at most
// outputLimit bytes kept of each of stdout and stderr, until the command
// ends, timeout passes (0: none) or ctx is done. Before the inner stage gets
// its spec (so before anything of the command runs), placed, when not nil,
// is called with the host pid of the sandbox's init (a cgroup takes it
// there); an error from it stops the run. On a stop the sandbox's init is
// killed, which ends its whole PID namespace, and RunBwrap returns once
// bwrap has seen it end; Status.Survivors is 1 when that could not be
// confirmed within killGrace.
//
// A socket listed for masking (Confinement.MaskedSockets) can be removed
// by its server in the instant before bubblewrap binds over it. In a
// read-only part of the view bubblewrap then cannot make the mount point
// and starts nothing: a gone socket needs no mask, so the command is tried
// again without the sockets that are gone, at most socketRetries more
// times. In a writable one it makes the mount point in the host's
// directory, which is removed again once the view is made
// (strayMountPoints), as are those of deny-read paths removed meanwhile.
//
// A path of the view that is not what the caller found (see
// Status.Changed: the stage's check of a protected, reserved, pinned or
// masked path failed, a pinned directory was gone before the start, or
// bubblewrap found a path of the view gone while it made it) ends the run
// with Status.Changed and Status.Error naming the path; nothing of the
// command ran, and the caller, which found the paths, searches again.
//
// Errors: bwrap could not be started. Ending without a status from the
// stage for a reason other than a stop is not an error: Status.Error then
// begins with SandboxNotStarted and holds bubblewrap's own message (also
// when the sandbox's init died before it could be placed or given its
// command).
func RunBwrap(ctx context.Context, b Bwrap, spec Spec, timeout time.Duration, outputLimit int, placed func(pid int) error, w Watch) (Outcome, error) {
	for attempt := 0; ; attempt++ {
		out, err := runBwrapOnce(ctx, b, spec, timeout, outputLimit, placed, w)
		if err != nil || out.Status.Started || out.Status.Stopped || !strings.HasPrefix(out.Status.Error, SandboxNotStarted) ||
			attempt == socketRetries || ctx.Err() != nil || spec.Confine == nil {
			return out, err
		}
		kept := slices.DeleteFunc(slices.Clone(spec.Confine.MaskedSockets), func(p string) bool {
			_, err := os.Lstat(p)
			return errors.Is(err, fs.ErrNotExist)
		})
		if len(kept) == len(spec.Confine.MaskedSockets) {
			return out, err // not a vanished socket
		}
		c := *spec.Confine
		c.MaskedSockets = kept
		spec.Confine = &c
	}
}

// socketRetries is how many more times RunBwrap tries a command whose
// sandbox could not start because a socket masked in its view vanished.
const socketRetries = 2

// runBwrapOnce is one attempt of RunBwrap.
func runBwrapOnce(ctx context.Context, b Bwrap, spec Spec, timeout time.Duration, outputLimit int, placed func(pid int) error, w Watch) (Outcome, error) {
	if spec.Confine == nil {
		return Outcome{Stdout: NewCapture(outputLimit), Stderr: NewCapture(outputLimit)}, errors.New("the bubblewrap isolation needs a confinement")
	}
	if b.Net != nil && spec.Confine.Network {
		return Outcome{Stdout: NewCapture(outputLimit), Stderr: NewCapture(outputLimit)}, errors.New("a command with the network does not join a loopback-only namespace")
	}
	// The stream gets bubblewrap's stderr from the command's start on.
	gate := holdUntilStart(w.Stderr)
	if gate != nil {
		w.Stderr = gate
	}
	out, err := outcome(ctx, timeout, outputLimit, w, func(ctx context.Context, out *Outcome, stdout, stderr io.Writer) (Status, time.Duration, error) {
		return runBwrap(ctx, b, spec, stdio{stdout, stderr, out.Stderr, w.Input, gate.open}, placed, w.Signals)
	})
	gate.end(out.Status.Started)
	return out, err
}

// stdio are the writers a bubblewrap run's output goes to, and the capture
// of its stderr, where bubblewrap's own message is read from.
type stdio struct {
	stdout, stderr io.Writer
	errs           *Capture
	input          *Input // nil: /dev/null
	// started, when not nil, is called once the stage said the command
	// started.
	started func()
}

// pipes are the descriptors RunBwrap hands to bwrap, its ends closed after
// the start.
type pipes struct {
	specR, specW, statusR, statusW, infoR, infoW *os.File
}

func newPipes() (*pipes, error) {
	var p pipes
	var err error
	if p.specR, p.specW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.statusR, p.statusW, err = os.Pipe(); err != nil {
		p.close()
		return nil, err
	}
	if p.infoR, p.infoW, err = os.Pipe(); err != nil {
		p.close()
		return nil, err
	}
	return &p, nil
}

func (p *pipes) close() {
	for _, f := range []*os.File{p.specR, p.specW, p.statusR, p.statusW, p.infoR, p.infoW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

func runBwrap(ctx context.Context, b Bwrap, spec Spec, out stdio, placed func(int) error, signals <-chan syscall.Signal) (Status, time.Duration, error) {
	p, err := newPipes()
	if err != nil {
		return Status{}, 0, err
	}
	defer p.close()
	pinned, err := pinMasks(spec.Confine)
	if err != nil {
		// Renamed or replaced since the masks were found: nothing started.
		return Status{Error: err.Error(), Changed: true}, 0, nil
	}
	conf := *spec.Confine
	conf.Pinned = pinned
	spec.Confine = &conf
	masks, err := maskSources(spec.Confine)
	if err != nil {
		return Status{}, 0, err
	}
	defer func() { closeAll(masks) }()
	conf.etcBound = make([]string, len(conf.EtcFiles))
	for i, e := range conf.EtcFiles {
		f, path, err := etcSource(e, conf.Masked)
		if err != nil {
			return Status{}, 0, err
		}
		if f != nil {
			masks = append(masks, f)
			conf.etcBound[i] = path
		}
	}
	args, err := argsFile(bwrapArgs(spec.Confine, b.Net != nil))
	if err != nil {
		return Status{}, 0, err
	}
	defer func() { _ = args.Close() }()
	term, termDone, err := out.input.attach(&spec, out.stdout)
	if err != nil {
		return Status{}, 0, err
	}
	// Returns once the sandbox is gone (below), which held the terminal.
	defer termDone()
	cmd := &exec.Cmd{
		Path: execPath(bwrapExeFD),
		Args: bwrapArgv("bwrap"),
		// bwrap passes its environment on to the stage only (the stage
		// execs the command with the spec's): the stage runs with the
		// collector off from its start (stage).
		Env:    []string{"GOGC=off"},
		Dir:    "/",
		Stdin:  out.input.stdin(),
		Stdout: out.stdout, Stderr: out.stderr,
		// fds 3..7, in the order of the constants above.
		ExtraFiles: []*os.File{p.specR, p.statusW, p.infoW, b.Stage.f, b.Exe.f},
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
			Credential: b.Credential,
		},
		WaitDelay: killGrace,
	}
	uid := uint32(os.Geteuid())
	if b.Credential != nil {
		uid = b.Credential.Uid
	}
	strays := recordMountPoints(spec.Confine, uid)
	// Once bubblewrap has made the view (the stage reports) or has given
	// up: after the sandbox is gone at the latest.
	defer strays.clear()
	started := time.Now()
	// Above the masks, which bwrap closes once read: the holders, which
	// the stage checks.
	held := conf.Held.heldFiles(&conf, maskFD+len(masks))
	if err := startBwrap(cmd, b, args, term, slices.Concat(masks, held)); err != nil {
		return Status{}, 0, err
	}
	// bwrap holds its copies: the arguments, the terminal's socket and the
	// masks' sources close at once.
	_ = args.Close()
	closeAll(masks)
	masks = nil
	if term != nil {
		_ = term.Close()
	}
	for _, f := range []*os.File{p.specR, p.statusW, p.infoW} {
		_ = f.Close()
	}
	p.specR, p.statusW, p.infoW = nil, nil, nil
	// The stage's status, read as it comes: its first document (Started,
	// or why not) is timed.
	status := make(chan statusRead, 1)
	go func() {
		status <- readStatus(p.statusR, func(first []byte) {
			strays.clear()
			if st, _, ok := lastStatus(bytes.NewReader(first)); ok && st.Started && out.started != nil {
				out.started()
			}
		})
	}()

	done := make(chan error, 1)
	go func() { done <- waitGroupGone(cmd) }()
	info := make(chan int, 1)
	go func() { info <- readChildPid(p.infoR) }()

	var (
		waitErr error
		exited  bool
		init    *initProcess
	)
	// The sandbox's init, before the stage may start anything.
	select {
	case pid := <-info:
		if pid > 0 {
			init = openInit(pid)
			init.janitorID = janitorSandbox(init)
		} else {
			// bwrap ended (or is ending) without making the sandbox.
			waitErr, exited = <-done, true
		}
	case waitErr = <-done:
		exited = true
	case <-ctx.Done():
	}
	var startErr error
	switch {
	case exited:
	case ctx.Err() != nil:
	case init == nil:
		startErr = errors.New("bubblewrap did not report its sandbox")
	case placed != nil:
		startErr = placed(init.pid)
	}
	if !exited && ctx.Err() == nil && startErr == nil {
		encErr := json.NewEncoder(p.specW).Encode(spec)
		_ = p.specW.Close()
		p.specW = nil
		if encErr != nil {
			startErr = fmt.Errorf("send the command to the sandbox: %w", encErr)
		}
	}
	if startErr != nil && init != nil && init.ended(deadInitGrace) {
		// The sandbox's init died making the view, before it could be
		// placed or given its command: bubblewrap's message (on stderr,
		// read below) says why, not the placement's "no such process" or
		// the spec's broken pipe.
		startErr, exited = nil, true
		waitErr = waitExited(cmd, done)
	}
	stopped := false
	if !exited {
		for startErr == nil && !exited && ctx.Err() == nil {
			select {
			case waitErr = <-done:
				exited = true
			case sig := <-signals:
				// The sandbox's init is the tree's root: every process
				// of the namespace descends from it.
				signalTree(init.pid, sig)
			case <-ctx.Done():
			}
		}
		if !exited {
			stopped = startErr == nil
			if !stopConfirmed(init, cmd, done, &waitErr) {
				init.close()
				return Status{
					Stopped: stopped, ExitCode: -1, Signal: "SIGKILL", Survivors: 1,
					Error: "the sandbox did not end within " + killGrace.String() + " of being killed",
				}, time.Since(started), startErr
			}
		}
	}
	// bwrap exits as soon as its init reports the command's exit code,
	// before that init has ended and the kernel has killed and reaped
	// the rest of the namespace: the call returns when nothing the
	// command started is left.
	if init != nil && !init.ended(killGrace) {
		init.kill()
		init.ended(killGrace)
	}
	init.close()
	d := time.Since(started)
	if startErr != nil {
		return Status{Error: startErr.Error()}, d, nil
	}
	// Every process that held the status pipe's write end is gone by now
	// (the namespace, and what bwrap left in its group: waitGroupGone):
	// its end comes at once. A wait without bound would hang the call on
	// a holder missed.
	var sr statusRead
	select {
	case sr = <-status:
	case <-time.After(killGrace):
		_ = p.statusR.Close() // ends readStatus's read
		return Status{Error: SandboxNotStarted + ": the sandbox ended, but its status pipe stayed open"}, d, nil
	}
	if st, started, ok := lastStatus(bytes.NewReader(sr.data)); ok {
		if st.Started {
			st.StartedAt = sr.first
		}
		if st.Changed && started {
			// Only the stage, before anything of the command ran, says a
			// path changed: a command is never started twice.
			st.Changed = false
		}
		switch {
		case stopped:
			st.Stopped, st.ExitCode, st.Signal = true, -1, "SIGKILL"
		case st.Started:
			// The shell was the sandbox's command: bwrap exits with its
			// code, and with 128+N when a signal N ended it (as a shell
			// reports it; bwrap does not say which it was).
			st.ExitCode = exitCode(waitErr)
		}
		return st, d, nil
	}
	if stopped {
		// Killed before the stage could report: its whole namespace is
		// gone (bwrap saw the init end).
		return Status{Stopped: true, ExitCode: -1, Signal: "SIGKILL"}, d, nil
	}
	// bwrap failed before the stage ran: its message is on stderr.
	msg := strings.TrimSpace(out.errs.String())
	if msg == "" && waitErr != nil {
		msg = waitErr.Error()
	}
	if path, ok := vanished(msg, spec.Confine); ok {
		return Status{Error: fmt.Sprintf("%s: %s changed or vanished while bubblewrap made the command's view (%s)",
			SandboxNotStarted, cmp.Or(path, "a path"), msg), Changed: true}, d, nil
	}
	return Status{Error: SandboxNotStarted + ": " + msg}, d, nil
}

// waitGroupGone waits for cmd (bwrap, the leader of a process group of its
// own) to exit, kills what is left of its process group, then reaps it and
// returns cmd.Wait's error. bwrap's child, the sandbox's init, leaves the
// group (setsid, --new-session) only after bwrap has reported its pid and
// let it go on: until then it waits for that word (an eventfd read, never
// ended by bwrap's death) holding every descriptor bwrap had, the stage's
// status pipe among them. A bwrap killed or dying in between left that
// child behind for good, with no parent, and the run waiting for the
// status pipe to close. What is left in the group once bwrap has exited is
// such a child: nothing else of the sandbox is ever in it (only a process
// of the server's own session could join the group, setpgid's rule: no
// command can, in its own session and PID namespace; the client's own
// processes could, and are killed with it). Killed before bwrap is reaped,
// while its pid (the group's id) cannot be reused, and only when the wait
// for it succeeded.
func waitGroupGone(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err == nil {
			// bwrap has exited and is not reaped: its group is still its.
			_ = unix.Kill(-pid, unix.SIGKILL)
		}
		return cmd.Wait()
	}
}

// deadInitGrace is how long runBwrap waits, after failing to place or
// start the sandbox's init, to see whether it had died on its own.
const deadInitGrace = 100 * time.Millisecond

// waitExited waits for cmd (bwrap, whose init has ended) to exit, killing
// it after killGrace, and returns its Wait error.
func waitExited(cmd *exec.Cmd, done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-time.After(killGrace):
		_ = cmd.Process.Kill()
		return <-done
	}
}

// vanished reports whether msg, bubblewrap's message when it could not make
// c's view, says a path of the view was gone or replaced while it made it
// (the source or target of a bind mount, the directory of a mount point: a
// process outside removed or renamed it after the caller found it), and
// returns the path of c it names ("" when it names none of them). These are
// bubblewrap 0.8's messages for a path operation (die_with_error: "bwrap:
// WHAT PATH: STRERROR") failing with ENOENT, ENOTDIR or ELOOP, and, for a
// bind mount, a target that was no longer a mount point when it came to
// remount it read-only (EINVAL, or not in the mount table: a file renamed
// over it took the new mount off it); and a masked path gone now whose
// mount point, or its parent, bubblewrap then tried to make and could not
// (EROFS in the read-only root, EACCES in a directory the command may not
// write: a root secret or a socket another process removed).
func vanished(msg string, c *Confinement) (string, bool) {
	what, ok := strings.CutPrefix(msg[strings.LastIndexByte(msg, '\n')+1:], "bwrap: ")
	if !ok {
		return "", false
	}
	errnos := []error{unix.ENOENT, unix.ENOTDIR, unix.ELOOP}
	switch {
	case strings.HasPrefix(what, "Can't bind mount ") || strings.HasPrefix(what, "Can't remount readonly on "):
		if strings.HasSuffix(what, " in mount table") {
			return namedPath(what, c), true
		}
		errnos = append(errnos, unix.EINVAL)
	case !slices.ContainsFunc([]string{
		"Can't find source path ", "Can't get type of source ", "Can't mkdir parents for ", "Can't mkdir ",
		"Can't create file at ", "Can't mount tmpfs on ",
	}, func(p string) bool { return strings.HasPrefix(what, p) }):
		return "", false
	}
	lower := strings.ToLower(what)
	// A mask's mount point gone, or its parent: bubblewrap tries to make
	// it where the path was, and fails however the place refuses (EROFS in
	// the read-only root; EACCES in a directory the command's account may
	// not write, under danger-full-access). A masked path (found
	// existing), missing now, vanished; a masked socket too, whether or
	// not one is there again (a socket another process removed: CI's
	// passes, another test's agent socket).
	if slices.ContainsFunc([]string{
		"Can't mkdir parents for ", "Can't mkdir ", "Can't create file at ",
	}, func(p string) bool { return strings.HasPrefix(what, p) }) {
		p := namedPath(what, c)
		if p != "" && slices.Contains(c.MaskedSockets, p) {
			// Another process's socket: removed, and perhaps made
			// again since (CI: another test's named.sock); the next
			// start lists the sockets anew.
			return p, true
		}
		if p != "" && slices.ContainsFunc(c.Masked, func(m Masked) bool { return m.Path == p }) {
			if _, err := os.Lstat(p); err != nil {
				return p, true
			}
		}
	}
	for _, e := range errnos {
		if strings.HasSuffix(lower, ": "+e.Error()) {
			return namedPath(what, c), true
		}
	}
	return "", false
}

// namedPath returns the longest path of c's view that msg names (bubblewrap
// names a bind mount's source under /oldroot and its target under
// /newroot), "" when none.
func namedPath(msg string, c *Confinement) string {
	if c == nil {
		return ""
	}
	paths := slices.Concat(c.WritableRoots, c.MaskedSockets, c.UnixSocketPaths, ancestors(c.Protected, c.Reserved, c.WritableRoots))
	for _, p := range c.Protected {
		paths = append(paths, p.Path)
	}
	for _, p := range c.Reserved {
		paths = append(paths, p.Path)
	}
	for _, p := range c.Pinned {
		paths = append(paths, p.Path)
	}
	for _, m := range c.Masked {
		paths = append(paths, m.Path)
	}
	best := ""
	for _, p := range paths {
		if len(p) > len(best) && namesPath(msg, p) {
			best = p
		}
	}
	return best
}

// namesPath reports whether msg holds p as a whole path: followed by the
// message's end, a space, a colon or a quote, not by more of a path.
func namesPath(msg, p string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], p)
		if j < 0 {
			return false
		}
		end := i + j + len(p)
		if end == len(msg) || strings.IndexByte(" :\"", msg[end]) >= 0 {
			return true
		}
		i += j + 1
	}
}

// startBwrap starts cmd (bwrap, bwrapArgv); with b.Net, through nsenter
// inside that namespace, whose command line names only descriptors too:
// bwrap's descriptors stay where they are, and nsenter and the namespaces'
// sit above them (netEnterFD...), closed by the inner stage before the
// command runs like every descriptor bwrap passes on. Above those, args
// (argsFile) at bwrapArgsFD and the masks' sources (maskFD...), which bwrap
// closes once read.
func startBwrap(cmd *exec.Cmd, b Bwrap, args, term *os.File, masks []*os.File) error {
	if b.Net != nil {
		release, err := b.Net.hold(b.Credential)
		if err != nil {
			return err
		}
		defer release()
		cmd.Path = execPath(netEnterFD)
		cmd.Args = b.Net.enterArgs(bwrapArgv(execPath(bwrapExeFD))...)
		cmd.ExtraFiles = b.Net.extraFiles(cmd.ExtraFiles...)
	}
	cmd.ExtraFiles = withArgs(cmd.ExtraFiles, args, term, masks)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start bubblewrap (%s): %w", b.Exe.Path(), err)
	}
	return nil
}

// withArgs returns files (descriptors 3 up) padded to termFD, then term
// there (nil: none), args at bwrapArgsFD and the masks' sources above it
// (maskFD...).
func withArgs(files []*os.File, args, term *os.File, masks []*os.File) []*os.File {
	return append(filesAt(files, termFD, term, args), masks...)
}

// filesAt returns files (descriptors 3 up) padded with nil (closed) to
// descriptor fd, then add from there.
func filesAt(files []*os.File, fd int, add ...*os.File) []*os.File {
	for len(files) < fd-3 {
		files = append(files, nil)
	}
	return append(files, add...)
}

// stopConfirmed kills the sandbox (its init, which ends the PID namespace,
// and bwrap) and waits for bwrap to exit, which it does only once the init,
// and so every process of the namespace, is gone. It reports false when
// bwrap had not exited within killGrace.
func stopConfirmed(init *initProcess, cmd *exec.Cmd, done <-chan error, waitErr *error) bool {
	if init != nil {
		init.kill()
	} else {
		// No init yet: bwrap has not made the sandbox, or failed to.
		_ = cmd.Process.Kill()
	}
	select {
	case *waitErr = <-done:
		return true
	case <-time.After(killGrace):
		_ = cmd.Process.Kill()
		*waitErr = <-done
		return false
	}
}

// exitCode is the exit code in a Wait error (0 for none, -1 when bwrap
// itself was killed).
func exitCode(waitErr error) int {
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		return ee.ExitCode()
	}
	if waitErr != nil {
		return -1
	}
	return 0
}

// statusRead is what the stage wrote on its status pipe, and when its
// first line came.
type statusRead struct {
	data  []byte
	first time.Time
}

// readStatus reads r to its end (every writer closed: the sandbox ended),
// timing the first line, which it gives to first as it comes.
func readStatus(r io.Reader, first func([]byte)) statusRead {
	br := bufio.NewReader(r)
	line, err := br.ReadBytes('\n')
	sr := statusRead{data: line, first: time.Now()}
	first(line)
	if err == nil {
		rest, _ := io.ReadAll(br)
		sr.data = append(sr.data, rest...)
	}
	return sr
}

// lastStatus decodes the stage's status documents (Started just before
// its exec, or why nothing started; both when the exec failed) and returns
// the last, and whether any said Started.
func lastStatus(r io.Reader) (last Status, started, ok bool) {
	dec := json.NewDecoder(r)
	for {
		var st Status
		if dec.Decode(&st) != nil {
			return last, started, ok
		}
		last, started, ok = st, started || st.Started, true
	}
}

// readChildPid reads bwrap's info document ({"child-pid": N}) and returns
// N, or 0 when bwrap ended without one.
func readChildPid(r io.Reader) int {
	var doc struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return 0
	}
	return doc.ChildPid
}

// initProcess is the sandbox's init, held by a pidfd so a kill never
// reaches a process that reused its pid.
type initProcess struct {
	pid   int
	pidfd int
	// janitorID is the number the janitor knows it by, when it holds it
	// too (janitorSandbox); 0 otherwise.
	janitorID uint64
}

func openInit(pid int) *initProcess {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fd = -1
	}
	return &initProcess{pid: pid, pidfd: fd}
}

func (p *initProcess) kill() {
	if p.pidfd >= 0 {
		_ = unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
		return
	}
	_ = unix.Kill(p.pid, unix.SIGKILL)
}

// ended waits up to d for the init to end, and reports whether it did. Its
// end comes after every other process of its PID namespace was killed and
// reaped (the kernel's zap_pid_ns_processes runs in the exiting init).
func (p *initProcess) ended(d time.Duration) bool {
	deadline := time.Now().Add(d)
	if p.pidfd >= 0 {
		for {
			left := time.Until(deadline)
			if left <= 0 {
				return false
			}
			fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, int(left.Milliseconds())+1)
			switch {
			case err == unix.EINTR:
				continue
			case err != nil:
				return false
			case n > 0:
				return true
			}
		}
	}
	for time.Now().Before(deadline) {
		if unix.Kill(p.pid, 0) == unix.ESRCH {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// close lets p go; the janitor too, once it has ended (one still alive,
// the janitor waits for should this process die).
func (p *initProcess) close() {
	if p != nil && p.janitorID != 0 && p.endedNow() {
		janitorEnded(p.janitorID)
		p.janitorID = 0
	}
	if p != nil && p.pidfd >= 0 {
		_ = unix.Close(p.pidfd)
		p.pidfd = -1
	}
}

// endedNow reports whether p has ended, without waiting.
func (p *initProcess) endedNow() bool {
	if p.pidfd >= 0 {
		fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 0)
			if err == unix.EINTR {
				continue
			}
			return err == nil && n > 0
		}
	}
	return unix.Kill(p.pid, 0) == unix.ESRCH
}

// SandboxNotStarted begins Status.Error when bwrap failed before the inner
// stage ran (its own message follows).
const SandboxNotStarted = "the sandbox did not start"

// ProbeBwrap starts exe once with the namespaces RunBwrap asks for, its
// options read from an arguments file as RunBwrap passes them (--args),
// running `true`, and returns its error output when it fails (no
// unprivileged user namespaces, an AppArmor rule for bwrap, a bwrap without
// --args, ...), or argsFile's error.
func ProbeBwrap(exe *Program) error {
	// The child's parent-death signal follows the thread that starts it
	// (see outcome): the thread is kept until the child is waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	args, err := argsFile([]string{
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
		"--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
	})
	if err != nil {
		return err
	}
	defer func() { _ = args.Close() }()
	cmd := &exec.Cmd{
		Path:        execPath(3),
		Args:        []string{"bwrap", "--args", "4", "--", "/bin/true"},
		Env:         []string{},
		Dir:         "/",
		ExtraFiles:  []*os.File{exe.f, args}, // fds 3 and 4
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if msg := strings.TrimSpace(string(out)); msg != "" {
			return errors.New(msg)
		}
		return err
	}
	return nil
}
