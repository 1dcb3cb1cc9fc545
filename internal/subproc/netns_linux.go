package subproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// NetNS is a network namespace with loopback only (up), and the user
// namespace that owns it, held by descriptors: the namespace the commands
// of one session share (Bwrap.Net), so a server one command starts on
// 127.0.0.1 is reachable by the next while both run. It lives while it is
// held: Close lets it go, and the kernel ends it once the last command
// inside it has ended too.
//
// No process holds it and nothing enters it by PID: the descriptors are
// opened once, from the process bubblewrap made it for while that process
// was known alive (its pidfd), and handed to nsenter as /proc/self/fd
// paths, so a PID reused later can never be entered, and the namespace
// cannot die while it is held.
//
// A command joins it as it joins its own today: nsenter (util-linux,
// single-threaded C: a Go process cannot enter a user namespace) enters the
// user namespace, then the network namespace, keeping its uid and gid
// (--preserve-credentials), and execs bwrap, which makes the command's own
// user namespace nested in it (--unshare-user, without --unshare-net).
// Capabilities over the shared namespace belong to its user namespace, in
// which no command ever runs, so no command can change it (no interface,
// address or route added, lo never downed).
//
// What it does not protect: commands that share it share its loopback, so
// one may connect to another's servers or take a port first; they are one
// agent's. Commands of different sessions never share one.
type NetNS struct {
	// mu is held for reading while a command is started in the namespace
	// (its descriptors being handed over), and for writing by Close.
	mu        sync.RWMutex
	user, net *os.File
	enter     *Program
	// uid and gid are those it was made for: the only credential that
	// may enter it.
	uid, gid uint32
}

// Descriptors of a command started in a NetNS, above RunBwrap's.
const (
	netEnterFD = 8
	netUserFD  = 9
	netNetFD   = 10
)

// netReady is what the process that makes the namespaces prints once
// bubblewrap has set them up (loopback up), before it waits for its stdin
// to close.
const netReady = "ready"

// ErrNetNSClosed is returned by RunBwrap for a NetNS that was closed.
var ErrNetNSClosed = errors.New("the session's network namespace has ended (the session ended)")

// NewNetNS makes a loopback-only network namespace owned by a new user
// namespace, with bubblewrap b.Exe run as b.Credential (nil: the server's
// user; the namespace then maps that user to itself, as every command's
// does), and checks that enter (util-linux nsenter) can enter it as that
// user. It costs one bwrap and one nsenter run, a few milliseconds.
//
// Errors: bwrap could not make the namespaces (its message); the namespaces
// found are the server's own (fail closed: commands would get the host's
// network); nsenter cannot enter them (its message: not util-linux's, or
// too old for --preserve-credentials).
func NewNetNS(b Bwrap, enter *Program) (*NetNS, error) {
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	if b.Credential != nil {
		uid, gid = b.Credential.Uid, b.Credential.Gid
	}
	user, net, err := makeNetNS(b)
	if err != nil {
		return nil, err
	}
	n := &NetNS{user: user, net: net, enter: enter, uid: uid, gid: gid}
	if err := n.probe(b); err != nil {
		_ = n.Close()
		return nil, err
	}
	return n, nil
}

// makeNetNS runs bwrap with a new user and network namespace around a
// shell that says it is ready and waits for its stdin to close, opens the
// two namespaces from that shell's /proc entry while its pidfd says it is
// alive, and lets it end.
func makeNetNS(b Bwrap) (user, net *os.File, err error) {
	// The child's parent-death signal follows the thread that starts it
	// (see outcome): the thread is kept until the child is waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer stdinW.Close() //nolint:errcheck // closed below too, on every path that started bwrap
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		_ = stdinR.Close()
		return nil, nil, err
	}
	defer stdoutR.Close() //nolint:errcheck // read end
	infoR, infoW, err := os.Pipe()
	if err != nil {
		_ = stdinR.Close()
		_ = stdoutW.Close()
		return nil, nil, err
	}
	defer infoR.Close() //nolint:errcheck // read end
	var stderr strings.Builder
	cmd := &exec.Cmd{
		Path: execPath(4),
		Args: []string{
			"bwrap", "--unshare-user", "--unshare-net", "--die-with-parent", "--new-session",
			"--ro-bind", "/", "/", "--info-fd", "3",
			"--", shell, "-c", "echo " + netReady + "; read -r _ || :",
		},
		Env: []string{}, Dir: "/",
		Stdin: stdinR, Stdout: stdoutW, Stderr: &stderr,
		ExtraFiles: []*os.File{infoW, b.Exe.f}, // fds 3 and 4
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
			Credential: b.Credential,
		},
		WaitDelay: killGrace,
	}
	err = cmd.Start()
	for _, f := range []*os.File{stdinR, stdoutW, infoW} {
		_ = f.Close()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("start bubblewrap (%s) for the network namespace: %w", b.Exe.Path(), err)
	}
	user, net, err = awaitNetNS(stdoutR, infoR)
	if err != nil {
		_ = cmd.Process.Kill()
	}
	// The shell reads its stdin's end and exits, and bwrap with it: the
	// namespaces stay, held by the descriptors.
	_ = stdinW.Close()
	_ = waitGroupGone(cmd)
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, nil, err
	}
	return user, net, nil
}

// awaitNetNS waits up to killGrace for the shell's ready line, then opens
// the namespaces of the process bwrap reported.
func awaitNetNS(stdout, info *os.File) (user, net *os.File, err error) {
	_ = stdout.SetReadDeadline(time.Now().Add(killGrace))
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != netReady {
		return nil, nil, errors.New("bubblewrap did not make the network namespace")
	}
	pid := readChildPid(info)
	if pid <= 0 {
		return nil, nil, errors.New("bubblewrap did not report the network namespace's process")
	}
	return openNamespaces(pid)
}

// openNamespaces opens the user and network namespaces of pid, which must
// be alive from before the open to after it (so they are its, not a reused
// PID's), and differ from this process's own (fail closed).
func openNamespaces(pid int) (user, net *os.File, err error) {
	p := openInit(pid)
	defer p.close()
	if p.pidfd < 0 {
		return nil, nil, fmt.Errorf("cannot hold the network namespace's process %d", pid)
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/ns/"
	if user, err = os.Open(dir + "user"); err != nil {
		return nil, nil, err
	}
	if net, err = os.Open(dir + "net"); err != nil {
		_ = user.Close()
		return nil, nil, err
	}
	fail := func(err error) (*os.File, *os.File, error) {
		_ = user.Close()
		_ = net.Close()
		return nil, nil, err
	}
	if p.exited() {
		return fail(errors.New("the network namespace's process ended before its namespaces were held"))
	}
	for _, ns := range []struct {
		f    *os.File
		name string
	}{{user, "user"}, {net, "net"}} {
		same, err := sameFile(ns.f, "/proc/self/ns/"+ns.name)
		if err != nil {
			return fail(err)
		}
		if same {
			// Fail closed: a command would join the server's own.
			return fail(fmt.Errorf("bubblewrap left the %s namespace the server's own", ns.name))
		}
	}
	return user, net, nil
}

// exited reports whether the process has exited (or cannot be told).
func (p *initProcess) exited() bool {
	for {
		fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}

// sameFile reports whether f is the file at path (device and inode).
func sameFile(f *os.File, path string) (bool, error) {
	var a, b unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &a); err != nil {
		return false, err
	}
	if err := unix.Stat(path, &b); err != nil {
		return false, err
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, nil
}

// probe runs `bwrap --version` through nsenter inside the namespaces, as
// the namespace's user: nsenter is usable and may enter them.
func (n *NetNS) probe(b Bwrap) error {
	// The child's parent-death signal follows the thread that starts it
	// (see outcome): the thread is kept until the child is waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := &exec.Cmd{
		Path:       execPath(netEnterFD),
		Args:       n.enterArgs(execPath(bwrapExeFD), "--version"),
		Env:        []string{},
		Dir:        "/",
		ExtraFiles: n.extraFiles(nil, nil, nil, nil, b.Exe.f),
		SysProcAttr: &syscall.SysProcAttr{
			Pdeathsig:  syscall.SIGKILL,
			Credential: b.Credential,
		},
		WaitDelay: killGrace,
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("nsenter (%s) cannot enter the network namespace: %s", n.enter.Path(), msg)
	}
	return nil
}

// enterArgs is nsenter's command line running argv inside the namespaces,
// with the descriptors at netUserFD and netNetFD.
func (n *NetNS) enterArgs(argv ...string) []string {
	return append([]string{
		"nsenter", "--user=" + execPath(netUserFD), "--net=" + execPath(netNetFD), "--preserve-credentials", "--",
	}, argv...)
}

// extraFiles returns files (descriptors 3 to 7, nil where unused) followed
// by nsenter and the two namespaces at their descriptors.
func (n *NetNS) extraFiles(files ...*os.File) []*os.File {
	return append(files, n.enter.f, n.user, n.net)
}

// hold takes the namespace for starting one command in it as cred (nil:
// the server's user), until release is called. Errors: it was closed
// (ErrNetNSClosed); cred is not the one it was made for.
func (n *NetNS) hold(cred *syscall.Credential) (release func(), err error) {
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	if cred != nil {
		uid, gid = cred.Uid, cred.Gid
	}
	if uid != n.uid || gid != n.gid {
		return nil, fmt.Errorf("the network namespace belongs to uid %d gid %d, not the command's uid %d gid %d", n.uid, n.gid, uid, gid)
	}
	n.mu.RLock()
	if n.net == nil {
		n.mu.RUnlock()
		return nil, ErrNetNSClosed
	}
	return n.mu.RUnlock, nil
}

// Close lets the namespace go: no command starts in it any more (RunBwrap
// returns ErrNetNSClosed), and the kernel ends it once the commands still
// inside it have ended. It waits for commands being started in it to have
// started. Closing twice is harmless.
func (n *NetNS) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.net == nil {
		return nil
	}
	err := errors.Join(n.user.Close(), n.net.Close())
	n.user, n.net = nil, nil
	return err
}
