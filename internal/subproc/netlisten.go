package subproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// listenStage is the helper's second argument for the short-lived process
// that makes a listener inside a NetNS (Listen).
const listenStage = "listen"

// Descriptors of the listen stage: the socket it hands the listener back
// on, and the helper program nsenter runs (above it, where RunBwrap keeps
// bwrap, below nsenter's and the namespaces').
const (
	listenSockFD   = 3
	listenHelperFD = 7
)

// listenOK is what the listen stage sends with the listener; anything else
// is its error.
const listenOK = "ok"

// Listen returns a TCP listener on 127.0.0.1 (a port the kernel picks)
// inside the namespace, for the server to accept on: connections come from
// the commands inside it, and whatever serves them (the domain proxy) dials
// out from the server's own namespace. A server cannot enter the namespace
// itself (a multi-threaded process cannot change its user namespace), so a
// short-lived helper does: nsenter enters the namespaces as cred (nil: the
// server's user; it must be the namespace's), runs helper (the harness
// binary, whose main calls Main first) in its listen stage, which makes the
// listener and hands its descriptor back over a socket pair (SCM_RIGHTS)
// and exits. The descriptor is checked before it is used: a listening TCP
// socket on 127.0.0.1 that lives in this namespace (fail closed: never one
// in the server's). The listener outlives Close; its owner closes it.
//
// Errors: the namespace was closed (ErrNetNSClosed); cred is not the one
// it was made for; the helper could not run or make the listener (its
// message); the descriptor is not such a listener.
func (n *NetNS) Listen(helper *Program, cred *syscall.Credential) (net.Listener, error) {
	fd, err := n.fromInside(helper, cred, listenStage, "listener")
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "namespace-listener")
	defer f.Close() //nolint:errcheck // net.FileListener holds a duplicate
	if err := n.checkListener(fd); err != nil {
		return nil, err
	}
	return net.FileListener(f)
}

// fromInside runs helper in stage inside the namespace (nsenter, as cred)
// and returns the descriptor of the socket the stage made there and sent
// back (what names it in errors). Errors: the namespace was closed
// (ErrNetNSClosed); cred is not the one it was made for; the helper could
// not run or make the socket (its message).
func (n *NetNS) fromInside(helper *Program, cred *syscall.Credential, stage, what string) (int, error) {
	fds, err := n.socketsFromInside(helper, cred, stage, what, nil, 1)
	if err != nil {
		return -1, err
	}
	return fds[0], nil
}

// socketsFromInside runs helper in stage with args inside the namespace
// (nsenter, as cred) and returns the want descriptors the stage made there and
// sent back in one message (what names them in errors). Errors: those of
// fromInside; another number of descriptors.
func (n *NetNS) socketsFromInside(helper *Program, cred *syscall.Credential, stage, what string, args []string, want int) ([]int, error) {
	// The child's parent-death signal follows the thread that starts it
	// (see outcome): the thread is kept until the child is waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	release, err := n.hold(cred)
	if err != nil {
		return nil, err
	}
	defer release()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket pair for the namespace's %s: %w", what, err)
	}
	ours := os.NewFile(uintptr(fds[0]), what+"-receive")
	defer ours.Close() //nolint:errcheck // only received on
	theirs := os.NewFile(uintptr(fds[1]), what+"-send")
	var out strings.Builder
	enter := n.enterArgs(append([]string{execPath(listenHelperFD), HelperArg, stage}, args...)...)
	files := n.extraFiles(theirs, nil, nil, nil, helper.f)
	cmd := &exec.Cmd{
		Path:   execPath(netEnterFD),
		Args:   enter,
		Env:    []string{},
		Dir:    "/",
		Stdout: &out, Stderr: &out,
		// fds 3 and 7, then nsenter and the namespaces.
		ExtraFiles: files,
		SysProcAttr: &syscall.SysProcAttr{
			Pdeathsig:  syscall.SIGKILL,
			Credential: cred,
		},
		WaitDelay: killGrace,
	}
	err = cmd.Start()
	_ = theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("start nsenter (%s) for the namespace's %s: %w", n.enter.Path(), what, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(killGrace):
		_ = cmd.Process.Kill()
		err = <-done
	}
	got, msg, rerr := receiveFDs(int(ours.Fd()), want)
	if rerr == nil && msg == listenOK && len(got) != want {
		rerr = fmt.Errorf("the stage sent %d descriptors, not %d", len(got), want)
	}
	if rerr != nil || msg != listenOK {
		for _, fd := range got {
			_ = unix.Close(fd)
		}
		why := msg
		if rerr != nil {
			why = rerr.Error()
		}
		if s := strings.TrimSpace(out.String()); s != "" {
			why += ": " + s
		} else if err != nil {
			why += ": " + err.Error()
		}
		return nil, fmt.Errorf("the namespace's %s could not be made: %s", what, why)
	}
	return got, nil
}

// inside reports whether the socket fd lives in this namespace (the
// kernel opens the socket's namespace: the server holds the capability
// over it, it or its user made it). Errors say why it cannot tell.
func (n *NetNS) inside(fd int) (bool, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.net == nil {
		return false, ErrNetNSClosed
	}
	nsfd, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS)
	if err != nil {
		return false, err
	}
	ns := os.NewFile(uintptr(nsfd), "socket-netns")
	defer ns.Close() //nolint:errcheck // only stat'd
	var a, b unix.Stat_t
	if err := errors.Join(unix.Fstat(nsfd, &a), unix.Fstat(int(n.net.Fd()), &b)); err != nil {
		return false, err
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, nil
}

// receiveFDs reads a stage's one message without waiting (it has exited):
// its text and the descriptors it carried (at most most, none on error).
func receiveFDs(sock, most int) (fds []int, msg string, err error) {
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4*most))
	nb, noob, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, "", fmt.Errorf("no answer from the listen stage: %w", err)
	}
	if noob > 0 {
		cmsgs, err := unix.ParseSocketControlMessage(oob[:noob])
		for i := range cmsgs {
			if err != nil {
				break
			}
			got, perr := unix.ParseUnixRights(&cmsgs[i])
			if perr == nil {
				fds = append(fds, got...)
			}
		}
	}
	msg = string(buf[:nb])
	if msg == listenOK && len(fds) == 0 {
		return nil, msg, errors.New("the listen stage sent no descriptor")
	}
	return fds, msg, nil
}

// checkListener verifies that fd is a listening TCP socket bound to
// 127.0.0.1 whose network namespace is this one.
func (n *NetNS) checkListener(fd int) error {
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	accepting, err3 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	sa, err4 := unix.Getsockname(fd)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("cannot check the namespace's listener: %w", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if domain != unix.AF_INET || typ != unix.SOCK_STREAM || accepting != 1 || !ok || in4.Addr != [4]byte{127, 0, 0, 1} {
		return errors.New("the namespace's listener is not a TCP listener on 127.0.0.1")
	}
	in, err := n.inside(fd)
	if err != nil {
		return fmt.Errorf("cannot tell the namespace of the listener: %w", err)
	}
	if !in {
		// Fail closed: a listener in another namespace (the server's)
		// would not be the commands'.
		return errors.New("the namespace's listener is not inside the namespace")
	}
	return nil
}

// listenMain is the listen stage, run by nsenter inside a NetNS: it makes a
// TCP listener on 127.0.0.1 (a port the kernel picks) and sends it on
// descriptor listenSockFD with listenOK, or sends why not; it returns 0
// when a message went out.
func listenMain() int {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		if err = unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err == nil {
			err = unix.Listen(fd, unix.SOMAXCONN)
		}
	}
	return sendMade(fd, err, "cannot listen on 127.0.0.1 inside the namespace")
}

// sendMade ends a stage that made a socket inside a NetNS: it sends fd on
// descriptor listenSockFD with listenOK, or, err set, failed's reason; it
// returns 0 when a message went out, else 125.
func sendMade(fd int, err error, failed string) int {
	return sendAllMade([]int{fd}, err, failed)
}

// sendAllMade is sendMade for several descriptors, sent in one message.
func sendAllMade(fds []int, err error, failed string) int {
	msg := listenOK
	var rights []byte
	if err != nil {
		msg = failed + ": " + err.Error()
	} else {
		rights = unix.UnixRights(fds...)
	}
	if err := unix.Sendmsg(listenSockFD, []byte(msg), rights, nil, 0); err != nil {
		return 125
	}
	return 0
}
