package execsandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/fsuser"
	"github.com/dsh-go/harness/internal/gpgagent"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// socketView is one command's Unix sockets: the named ones that exist now
// (canonical), the socket bound at a named path that is not the path
// itself (subproc.Confinement.SocketSources), and the bound sockets its
// bubblewrap view masks.
type socketView struct {
	named, masked []string
	sources       map[string]string
}

// sockets resolves the configured named sockets for one command of policy
// and, when the bubblewrap view must keep the command to them and to its
// own (no Unix sockets allowed wholesale, Landlock without ABI 9), lists
// every other bound socket to mask (the command's own are bound after it
// starts: none is among them), in every network namespace a task visible in /proc
// is in (maskedSockets), and every socket file inside the policy's roots a
// socket is bound to (socketWalker: found there wherever a command renamed
// its directory to, and whatever namespace bound it; socketBound; sockets
// found by both are masked once). Under bubblewrap both keep only the sockets whose
// directories the command's user may search, or could make searchable by
// owning them (permits: bwrap, running as that user, could not set up a
// mount elsewhere, and the command could not connect there anyway). Errors (exec.CodeUnavailable): the bound sockets cannot be
// listed, or the walk of the writable roots did not finish within timeout
// (0: ctx's deadline) and its budget; the command is not run. Each mask costs bwrap about 2 ms to set
// up, so sockets the user cannot connect to, by their modes and ACLs, and
// cannot open to itself (it owns none of the way) are not masked.
func (r *Runner) sockets(ctx context.Context, policy sandbox.ExecutionPolicy, timeout time.Duration) (socketView, error) {
	return r.socketsBeside(ctx, policy, timeout).wait()
}

// pendingSockets is a command's sockets (Runner.sockets) being listed
// beside the rest of its view.
type pendingSockets struct {
	done chan struct{}
	v    socketView
	err  error
}

// socketsBeside is Runner.sockets, returned before the listing of the
// network namespaces' bound sockets (maskedSockets, the costly part: a
// look at every task in /proc) has ended, which goes on beside the rest of
// the command's view; wait returns the whole. The walk of the roots
// (socketWalker) is done before it returns: a walk in progress while the
// command's placeholders are made would keep nothing, and the next
// command would walk again.
func (r *Runner) socketsBeside(ctx context.Context, policy sandbox.ExecutionPolicy, timeout time.Duration) *pendingSockets {
	p := &pendingSockets{done: make(chan struct{})}
	ready := func(v socketView, err error) *pendingSockets {
		p.v, p.err = v, err
		close(p.done)
		return p
	}
	if len(r.named) == 0 && !r.ownSockets() {
		return ready(socketView{}, nil)
	}
	var v socketView
	var ids map[fileID]bool
	v.named, v.sources, ids = namedSockets(r.named)
	if r.bwrap == nil {
		return ready(v, nil)
	}
	uid, gids := viewUser(policy)
	v.named = searchableBy(v.named, uid, gids)
	if r.cfg.UnixSockets || subproc.Probe().ResolveUnix {
		return ready(v, nil)
	}
	// The session's own commands' sockets (bound in its network
	// namespace), by the identity of the file each is bound to: reached,
	// not masked.
	if s := session.FromContext(ctx); s != nil && !r.cfg.Network {
		cred, _ := commandUser(policy, nil)
		for id := range r.bwrap.nets.ownBound(s, cred) {
			ids[fileID{id.Dev, id.Ino}] = true
		}
	}
	walked, err := r.sockWalk.find(searchContext(ctx, timeout), policy, uid)
	if err != nil {
		return ready(v, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"the Unix sockets inside the command's roots to mask beside the named ones cannot all be found: %v; the command was not run rather than run able to reach them", err), Cause: err})
	}
	go func() {
		defer close(p.done)
		masked, err := maskedSockets(ids)
		if err != nil {
			p.v, p.err = v, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
				"the bound Unix sockets to mask beside the named ones cannot be listed: %v; the command was not run rather than run able to reach them", err)}
			return
		}
		// Under danger-full-access the directories on the way to a masked
		// socket are not pinned: a background command could swap a stale
		// file's directory with a live socket's between the check and the
		// mount (the attack review of issue 36), so every socket file found
		// stays masked there.
		masked = addSockets(masked, walked, ids, policy.Mode != sandbox.DangerFullAccess)
		for _, q := range searchableBy(masked, uid, gids) {
			if permits(q, uid, gids, 0o2) {
				v.masked = append(v.masked, q)
			}
		}
		p.v = v
	}()
	return p
}

// wait returns the sockets once listed: Runner.sockets' result and error.
func (p *pendingSockets) wait() (socketView, error) {
	<-p.done
	return p.v, p.err
}

// searchableBy returns the paths (canonical) whose every directory the user
// uid with groups gids may search (permits, with the search bit).
func searchableBy(paths []string, uid uint32, gids []uint32) []string {
	var out []string
	for _, p := range paths {
		if searchable(filepath.Dir(p), uid, gids) {
			out = append(out, p)
		}
	}
	return out
}

// searchable reports whether dir and every directory above it let uid (with
// gids) search them.
func searchable(dir string, uid uint32, gids []uint32) bool {
	for {
		if !permits(dir, uid, gids, 0o1) {
			return false
		}
		if dir == "/" {
			return true
		}
		dir = filepath.Dir(dir)
	}
}

// permits reports whether path (its last component not followed) grants uid
// with groups gids the access want (fsuser.Write, fsuser.Search), now or
// once uid wants it: a path uid owns counts as granting whatever its mode,
// since its owner may chmod it (a command that shut its own directory
// before one start would find the socket in it unmasked at the next and
// open it again); else as the kernel decides it for a user without
// capabilities (fsuser.Account.May: the mode bits and the POSIX access
// ACL). A path the server may not look at (EACCES) or whose ACL cannot be
// read counts as granting too, so a socket it might open is masked, and a
// directory it might shut is tried (where it does shut it, bwrap fails to
// start the command: fail closed). A path that is missing grants nothing.
func permits(path string, uid uint32, gids []uint32, want fsuser.Access) bool {
	var st unix.Stat_t
	switch err := unix.Lstat(path, &st); {
	case errors.Is(err, unix.EACCES):
		return true
	case err != nil:
		return false
	case st.Uid == uid:
		return true
	}
	ok, err := fsuser.Account{UID: uid, GIDs: gids}.May(path, want, false)
	if err != nil {
		return errors.Is(err, fsuser.ErrACL) || errors.Is(err, unix.EACCES)
	}
	return ok
}

// fileID is a file's identity.
type fileID struct{ dev, ino uint64 }

// socketID returns the identity of the Unix socket at path (lstat: its last
// component is not followed), false when there is none.
func socketID(path string) (fileID, bool) {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), st.Ino}, true //nolint:unconvert // Dev is uint64 on most arches only
}

// pinnedSocket is a named socket as pinned at start: its canonical path
// (symlinks followed once, by New) and the uid owning it then.
type pinnedSocket struct {
	path string
	// source, when set, is the socket bound at path in the view (the
	// gpg-agent's restricted socket at its usual path); the identity
	// and owner checked are its.
	source string
	uid    uint32
}

// pinSockets pins each of paths (checked by CheckUnixSocket) at start: its
// canonical path and its owner. Errors: one no longer resolves to a Unix
// socket.
func pinSockets(paths []string) ([]pinnedSocket, error) {
	var out []pinnedSocket
	for _, p := range paths {
		c, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(c, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return nil, fmt.Errorf("%q (%s) is not a Unix socket now", p, c)
		}
		out = append(out, pinnedSocket{path: c, uid: st.Uid})
	}
	return out, nil
}

// namedSockets resolves the pinned named sockets for one command: each
// canonical path, opened without following any symlink in any component
// (openat2 RESOLVE_NO_SYMLINKS), that is a Unix socket owned by the uid
// that owned it at start, and the identities of those sockets. A path that
// is missing, reached through a symlink now (its directory replaced by one
// holding a symlink), not a socket, or owned by another user grants
// nothing for that command; an agent restarted at the same path by the
// same user is the new socket.
//
// A socket with a source is bound from it: the source is the socket
// checked, and its path must be a socket now too (the mount point); its
// identity is not among those returned, so the source stays masked at its
// own path and the socket at the path is masked beneath the bind.
func namedSockets(pinned []pinnedSocket) ([]string, map[string]string, map[fileID]bool) {
	var out []string
	var sources map[string]string
	ids := map[fileID]bool{}
	for _, p := range pinned {
		if p.source != "" {
			if _, ok := ownedSocketID(p.source, p.uid); !ok {
				continue
			}
			if _, ok := ownedSocketID(p.path, p.uid); !ok {
				continue
			}
			if sources == nil {
				sources = map[string]string{}
			}
			sources[p.path] = p.source
			out = append(out, p.path)
			continue
		}
		id, ok := ownedSocketID(p.path, p.uid)
		if !ok {
			continue
		}
		ids[id] = true
		out = append(out, p.path)
	}
	return out, sources, ids
}

// pinAgent pins the gpg-agent's sockets at start: its usual socket's path
// (canonical), bound from its restricted socket (canonical), owned by the
// restricted socket's owner. Errors: either is not a Unix socket now.
func pinAgent(a gpgagent.Agent) (pinnedSocket, error) {
	pinned, err := pinSockets([]string{a.Socket, a.ExtraSocket})
	if err != nil {
		return pinnedSocket{}, fmt.Errorf("the agent's sockets: %w (is gpg-agent running?)", err)
	}
	return pinnedSocket{path: pinned[0].path, source: pinned[1].path, uid: pinned[1].uid}, nil
}

// ownedSocketID returns the identity of the socket at path when, reached
// without symlinks, it is a socket owned by uid (false otherwise).
func ownedSocketID(path string, uid uint32) (fileID, bool) {
	st, err := dirfd.StatNoSymlinks(path)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Uid != uid {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), st.Ino}, true //nolint:unconvert // Dev is uint64 on most arches only
}

// addSockets returns masked with each of walked that is a socket now, none
// of named (by identity) and not in masked yet appended; with skipStale,
// only those a socket is bound to (a file no socket is bound to any more,
// left by a server that stopped without removing it, is the command's to
// remove and bind again: masked, it could do neither).
func addSockets(masked, walked []string, named map[fileID]bool, skipStale bool) []string {
	for _, p := range walked {
		id, ok := socketID(p)
		if ok && !named[id] && !slices.Contains(masked, p) && (!skipStale || socketBound(p)) {
			masked = append(masked, p)
		}
	}
	return masked
}

// socketBound reports whether a socket, in any network namespace, is bound to
// the socket file at path (its last component not followed), and true
// whenever that cannot be told. It asks the kernel without connecting to
// it: a datagram socket is connected to the file through a descriptor of
// it (so it is that file, whatever the path names meanwhile); the kernel
// finds the socket bound to the file by its inode, wherever it was bound,
// and refuses with ECONNREFUSED only when there is none (a stream or
// seqpacket socket gets EPROTOTYPE and sees nothing; a datagram socket is
// not told of a peer's connect).
func socketBound(path string) bool {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return true
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return true
	}
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return true
	}
	defer func() { _ = unix.Close(s) }()
	err = unix.Connect(s, &unix.SockaddrUnix{Name: fmt.Sprintf("/proc/self/fd/%d", fd)})
	return !errors.Is(err, unix.ECONNREFUSED)
}

// maskedSockets returns, canonical and once each, the pathname Unix sockets
// bound in every network namespace the server sees a task of
// (boundEverywhere: its own, another session's, a PrivateNetwork= service's,
// a container's) that exist as socket files now and are none of named (by
// identity): the sockets a command's view masks. A path of another
// namespace's listing is taken both as it reads here and as it reads in
// the mount namespaces of that namespace's tasks (hostPaths: a container's
// socket on a host volume is listed by its path inside the container). A
// socket bound by a relative path, or in a namespace no task visible in
// /proc is in, is not listed (README: the residual). Errors: the server's
// own namespace's listing or mount table cannot be read.
func maskedSockets(named map[fileID]bool) ([]string, error) {
	listings, err := boundEverywhere(procRoot)
	if err != nil {
		return nil, err
	}
	var ours []*mountinfo.Info
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		// A listed path the server may not look at (a directory on the
		// way shut to it: a command's own, chmod 000 or 0400 by an
		// earlier command) is masked all the same: its owner could open
		// it again.
		id, ok := socketID(p)
		if !ok && !errors.Is(unix.Access(p, unix.F_OK), unix.EACCES) || ok && named[id] {
			return
		}
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return
		}
		c := filepath.Join(dir, filepath.Base(p))
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, l := range listings {
		for _, p := range l.paths {
			add(p)
		}
		if len(l.tasks) == 0 || len(l.paths) == 0 {
			continue
		}
		if ours == nil {
			if ours, err = mountTable(filepath.Join(procRoot, "thread-self/mountinfo")); err != nil {
				return nil, fmt.Errorf("the server's mount table: %w", err)
			}
		}
		for _, p := range hostPaths(l, ours) {
			add(p)
		}
	}
	return out, nil
}

// procRoot is the proc filesystem read for the tasks' network namespaces.
const procRoot = "/proc"

// listing is the pathname sockets bound in one network namespace, as their
// binders named them, and the tasks seen in that namespace (proc's
// PID/task/TID directories; none for the reader's own namespace), whose
// mount namespaces those paths are of.
type listing struct {
	paths []string
	tasks []string
}

// boundEverywhere returns the listing (boundPaths) of the network
// namespace of the reading thread (proc's thread-self/net/unix; self/net
// is the thread group leader's) and of every other namespace a task under
// proc is in (PID/task/TID/net/unix: a thread may have entered a namespace
// of its own), each namespace's read once: namespaces are told apart by
// the inode of their net/unix entry, which proc makes per namespace, and a
// stat of it needs no access to the task. A task that ends while it is
// read is left out. Each process's task directory is opened once and its
// tasks looked up from it; one with a single task (proc counts a task
// directory's links as two plus its tasks) is not listed: its task is the
// process. Its cost is a few calls a process and one stat a task (a
// desktop runs thousands of threads), made beside the rest of a command's
// view (socketsBeside). Errors: the reader's own listing cannot be read or
// parsed, or proc cannot be listed.
func boundEverywhere(proc string) ([]listing, error) {
	seen := map[uint64]int{} // the inode of a namespace's net/unix: its index in out
	var out []listing
	// list reads the namespace of the task open beneath dirFD as name
	// (task: its path, for the mount tables of another namespace's
	// tasks).
	list := func(dirFD int, name string, task func() string) error {
		var st unix.Stat_t
		if err := unix.Fstatat(dirFD, name+"/net/unix", &st, 0); err != nil {
			return err
		}
		if i, ok := seen[st.Ino]; ok {
			if len(out[i].tasks) > 0 {
				out[i].tasks = append(out[i].tasks, task())
			}
			return nil
		}
		fd, err := unix.Openat(dirFD, name+"/net/unix", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), name)
		defer func() { _ = f.Close() }()
		paths, err := boundPaths(f)
		if err != nil {
			return err
		}
		seen[st.Ino] = len(out)
		l := listing{paths: paths}
		if len(out) > 0 {
			l.tasks = []string{task()}
		}
		out = append(out, l)
		return nil
	}
	d, err := os.Open(proc)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }()
	procFD := int(d.Fd())
	if err := list(procFD, "thread-self", func() string { return filepath.Join(proc, "thread-self") }); err != nil {
		return nil, err
	}
	pids, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	for _, pid := range pids {
		if numeric(pid) {
			listTasks(procFD, proc, pid, list)
		}
	}
	return out, nil
}

// listTasks lists (boundEverywhere's list) each task of process pid, whose
// task directory is opened beneath procFD (proc's); a process that ended
// meanwhile is left out.
func listTasks(procFD int, proc, pid string, list func(dirFD int, name string, task func() string) error) {
	fd, err := unix.Openat(procFD, pid+"/task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return // ended
	}
	d := os.NewFile(uintptr(fd), pid)
	defer func() { _ = d.Close() }()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Nlink == 3 && list(fd, pid, func() string { return filepath.Join(proc, pid, "task", pid) }) == nil {
		return // its one task, the process itself (a zombie leader counts)
	}
	tids, err := d.Readdirnames(-1)
	if err != nil {
		return
	}
	for _, tid := range tids {
		_ = list(fd, tid, func() string { return filepath.Join(proc, pid, "task", tid) }) // ended, or not readable: nothing to add
	}
}

// numeric reports whether name is a decimal number (a /proc PID entry).
func numeric(name string) bool {
	return name != "" && strings.Trim(name, "0123456789") == ""
}

// boundPaths parses a /proc/net/unix listing ("Num RefCount Protocol Flags
// Type St Inode Path", a header line first) and returns the absolute paths
// in its Path column: abstract names (@...), relative paths and unbound
// sockets are left out. Errors: a read error, or a listing without the
// header.
func boundPaths(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	if !sc.Scan() {
		return nil, errors.Join(errors.New("no header in the Unix socket listing"), sc.Err())
	}
	if !strings.HasPrefix(sc.Text(), "Num ") {
		return nil, fmt.Errorf("the Unix socket listing has an unknown format: %q", sc.Text())
	}
	var out []string
	for sc.Scan() {
		rest := sc.Text()
		// Seven fields, then one space and the path (which may hold
		// spaces).
		for range 7 {
			rest = strings.TrimLeft(rest, " ")
			i := strings.IndexByte(rest, ' ')
			if i < 0 {
				rest = ""
				break
			}
			rest = rest[i:]
		}
		if p := strings.TrimPrefix(rest, " "); strings.HasPrefix(p, "/") {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}
