package subproc

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The janitor (issue 34, "a crash leaves nothing"): a process of the
// helper program that outlives its server to remove the placeholders the
// server's commands reserved when the server dies without releasing them
// (kill -9, a crash, the OOM killer). The server tells it each placeholder
// it reserves (path, kind, content; once per distinct one) and hands it a
// pidfd of each sandbox's init as that starts, taking it back once the
// init has ended. When the server's end of their socket closes (only the
// server's death closes it: it is never closed otherwise), the janitor
// waits for the sandboxes it was handed to end (each is killed by its
// bubblewrap's parent-death signal, which the server's death sends), then
// removes each placeholder that is still one and that nothing holds (an
// exclusive flock succeeds: another server's command holds it shared),
// exactly as a release does. While a sandbox it waits for lives on past
// janitorWait it removes nothing: a placeholder removed under a running
// command takes its mount with it.

// janitorStage is the helper's second argument for the janitor.
const janitorStage = "janitor"

// janitorFD is the janitor's end of its socket, in the janitor; its
// program's descriptor is the one above.
const janitorFD = 3

// janitorWait bounds the janitor's wait for its dead server's sandboxes.
const janitorWait = 30 * time.Second

// janitorSendTimeout bounds a message's send: a janitor that reads
// nothing that long is killed and no longer used.
const janitorSendTimeout = time.Second

// The janitor's messages, one per packet: a reservation ('R', the kind's
// byte, the content, a NUL, the path), a sandbox's init ('P', its pid,
// with its pidfd attached when there is one) and that init's end ('E',
// its pid).
const (
	msgReserved = 'R'
	msgSandbox  = 'P'
	msgEnded    = 'E'
)

var janitor struct {
	once sync.Once
	mu   sync.Mutex
	fd   int // the server's end of the socket; -1 when no janitor runs
	proc *os.Process
	told map[string]bool // the reservations announced, by message
}

func init() { janitor.fd = -1 }

// StartJanitor starts, once per process, the janitor from prog (a program
// whose main calls Main first when IsHelper(os.Args): the command
// helper), in a session of its own and without a parent-death signal, so
// that it outlives this process. Later calls return the first one's
// error. Without a janitor (an error here, or one killed after it stopped
// reading) commands run as before, and a server that dies leaves its
// placeholders until a later command of any server reserves and releases
// them. Errors: the socket or the process cannot be made.
func StartJanitor(prog *Program) error {
	var err error
	janitor.once.Do(func() { err = startJanitor(prog) })
	return err
}

func startJanitor(prog *Program) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	theirs := os.NewFile(uintptr(fds[1]), "janitor")
	defer func() { _ = theirs.Close() }()
	tv := unix.NsecToTimeval(janitorSendTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fds[0], unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		_ = unix.Close(fds[0])
		return err
	}
	cmd := &exec.Cmd{
		Path:        execPath(janitorFD + 1),
		Args:        []string{"harness-janitor", HelperArg, janitorStage},
		Env:         []string{},
		Dir:         "/",
		ExtraFiles:  []*os.File{theirs, prog.f},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		_ = unix.Close(fds[0])
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped should it end first
	janitor.mu.Lock()
	janitor.fd, janitor.proc, janitor.told = fds[0], cmd.Process, map[string]bool{}
	janitor.mu.Unlock()
	return nil
}

// janitorSend sends msg (with fd attached when fd >= 0) to the janitor,
// if one runs. A janitor that does not take it is killed and dropped: one
// that missed a sandbox could remove its placeholders while it lives.
// Call with janitor.mu held.
func janitorSend(msg []byte, fd int) {
	if janitor.fd < 0 {
		return
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	for {
		err := unix.Sendmsg(janitor.fd, msg, oob, nil, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			_ = janitor.proc.Kill()
			_ = unix.Close(janitor.fd)
			janitor.fd = -1
		}
		return
	}
}

// janitorReserved tells the janitor of a placeholder of kind k holding
// content at path, the first time this process reserves it.
func janitorReserved(path string, k kind, content string) {
	msg := append(append(append([]byte{msgReserved, byte('0' + k)}, content...), 0), path...)
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	if janitor.fd < 0 || janitor.told[string(msg)] {
		return
	}
	janitorSend(msg, -1)
	janitor.told[string(msg)] = true
}

// janitorSandbox hands the janitor the sandbox's init p, and reports
// whether it did (p.ended then takes it back).
func janitorSandbox(p *initProcess) bool {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	if janitor.fd < 0 {
		return false
	}
	janitorSend(append([]byte{msgSandbox}, strconv.Itoa(p.pid)...), p.pidfd)
	return janitor.fd >= 0
}

// janitorEnded tells the janitor the init pid handed to it has ended.
func janitorEnded(pid int) {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	janitorSend(append([]byte{msgEnded}, strconv.Itoa(pid)...), -1)
}

// janitorReservation is one placeholder the janitor was told of.
type janitorReservation struct {
	path, content string
	k             kind
}

// janitorMain is the janitor: it reads its server's messages until the
// server is gone, waits for the sandboxes it was handed, and removes the
// placeholders left. It exits 0 when it tried each, 1 when a sandbox
// outlived janitorWait (nothing removed).
func janitorMain() int {
	_ = unix.Close(janitorFD + 1) // its own program
	reserved := map[janitorReservation]bool{}
	inits := map[int]int{} // pid: pidfd, -1 without one
	buf := make([]byte, 2*unix.PathMax)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(janitorFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			break // the server is gone
		}
		fd := -1
		if oobn > 0 {
			if cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(cmsgs) > 0 {
				if fds, err := unix.ParseUnixRights(&cmsgs[0]); err == nil && len(fds) > 0 {
					fd = fds[0]
				}
			}
		}
		msg := buf[:n]
		switch msg[0] {
		case msgReserved:
			if i := indexByte(msg, 0); i > 1 {
				reserved[janitorReservation{path: string(msg[i+1:]), content: string(msg[2:i]), k: kind(msg[1] - '0')}] = true
			}
		case msgSandbox:
			if pid, err := strconv.Atoi(string(msg[1:])); err == nil {
				if old, ok := inits[pid]; ok && old >= 0 {
					_ = unix.Close(old)
				}
				inits[pid] = fd
				fd = -1
			}
		case msgEnded:
			if pid, err := strconv.Atoi(string(msg[1:])); err == nil {
				if old, ok := inits[pid]; ok && old >= 0 {
					_ = unix.Close(old)
				}
				delete(inits, pid)
			}
		}
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
	if !sandboxesEnded(inits, time.Now().Add(janitorWait)) {
		return 1
	}
	for r := range reserved {
		removeUnheld(r)
	}
	return 0
}

// indexByte is bytes.IndexByte.
func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// sandboxesEnded waits until every init of inits (pid: pidfd, or -1) has
// ended, or the deadline, and reports whether they all did.
func sandboxesEnded(inits map[int]int, deadline time.Time) bool {
	for pid, fd := range inits {
		p := &initProcess{pid: pid, pidfd: fd}
		left := time.Until(deadline)
		if left <= 0 || !p.ended(left) {
			return false
		}
		p.close()
	}
	return true
}

// removeUnheld removes r's placeholder when it is still one and nothing
// holds it (Reservation.removeHeld).
func removeUnheld(r janitorReservation) {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	if r.k == kindDir {
		flags |= unix.O_DIRECTORY
	}
	fd, err := unix.Open(r.path, flags, 0)
	if err != nil {
		return
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return
	}
	held := &Reservation{Path: r.path, Dir: r.k == kindDir, FIFO: r.k == kindFIFO, content: r.content, ino: st.Ino}
	held.removeHeld(fd)
}
