package subproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Descriptors of a stage that makes sockets: the socket it hands them back
// on, and the helper program nsenter runs (above it, where RunBwrap keeps
// bwrap, below nsenter's and the namespaces').
const (
	listenSockFD   = 3
	listenHelperFD = 7
)

// listenOK is what a stage sends with the sockets it made; anything else
// is its error.
const listenOK = "ok"

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
		Env:    selfEnv,
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
		return nil, "", fmt.Errorf("no answer from the stage: %w", err)
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
		return nil, msg, errors.New("the stage sent no descriptor")
	}
	return fds, msg, nil
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
