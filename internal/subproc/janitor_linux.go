package subproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The janitor (issue 34, "a crash leaves nothing"): a process of the
// helper program that outlives its server to remove the placeholders the
// server's commands reserved when the server dies without releasing them
// (kill -9, a crash, the OOM killer). The server hands it a pidfd of
// itself, tells it each placeholder it holds (path, kind, content, its
// identity and its directory's; the latest for each path) and hands it a
// pidfd of each sandbox's init as that starts, taking it back once the
// init has ended. When the server's end of their socket closes (only the
// server's death closes it: it is never closed otherwise), the janitor
// waits for the server to be gone (its descriptors, the holds among them,
// closed), kills every sandbox it was handed (bubblewrap's parent-death
// signals end them too, but a sandbox's init takes its own only once the
// view is made) and waits for each to end, then removes each placeholder
// that is still the one reserved (its identity: never something the
// server did not make) and that nothing holds (an exclusive flock, tried
// for about a second: another server's command holds it shared), through
// the directory it was reserved in, as a release does. While a sandbox
// lives on past janitorWait it removes nothing: a placeholder removed
// under a running command takes its mount with it. It ignores the
// signals that stop a server (a service manager's SIGTERM to the whole
// group), and says on the server's standard error what it left.

// janitorStage is the helper's second argument for the janitor.
const janitorStage = "janitor"

// janitorFD is the janitor's end of its socket, in the janitor; its
// program's descriptor is the one above.
const janitorFD = 3

// janitorWait bounds the janitor's wait for its dead server's sandboxes.
const janitorWait = 30 * time.Second

// janitorPause is how long the janitor waits, once it has taken every
// message queued, before it reads again.
const janitorPause = 20 * time.Millisecond

// janitorSendTimeout bounds a message's send: a janitor that reads
// nothing that long is killed and no longer used.
const janitorSendTimeout = time.Second

// The janitor's messages, one per packet: the server itself ('S', with
// its pidfd attached); a placeholder being made ('T', then NUL-separated:
// the kind's byte and the content, the identities as numbers (its change
// time unknown), the temporary path, the path) or one held ('R', the same
// with its change time and no temporary path); the paths whose
// placeholders a release removed ('U', NUL-separated); a sandbox's init
// ('P' and the server's number for it, with its pidfd attached when there
// is one) and that init's end ('E' and its number).
const (
	msgServer   = 'S'
	msgMaking   = 'T'
	msgReserved = 'R'
	msgReleased = 'U'
	msgSandbox  = 'P'
	msgEnded    = 'E'
)

var janitor struct {
	once sync.Once
	mu   sync.Mutex
	fd   int // the server's end of the socket; -1 when no janitor runs
	proc *os.Process
	warn func(msg string, err error)
	told map[string][2]uint64 // the device and inode last told of each path
	seq  uint64               // the last sandbox's number
}

func init() { janitor.fd = -1 }

// StartJanitor starts, once per process, the janitor from prog (a program
// whose main calls Main first when IsHelper(os.Args): the command
// helper), in a session of its own and without a parent-death signal, so
// that it outlives this process; warn (may be nil) hears of a janitor
// dropped later (one that stopped taking messages is killed: one that
// missed a sandbox could remove a placeholder under it). Later calls
// return the first one's error. Without a janitor commands run as before,
// and a server that dies leaves its placeholders until a later command of
// any server reserves and releases them. Errors: the socket, the pidfd or
// the process cannot be made.
func StartJanitor(prog *Program, warn func(msg string, err error)) error {
	var err error
	janitor.once.Do(func() { err = startJanitor(prog, warn) })
	return err
}

func startJanitor(prog *Program, warn func(msg string, err error)) error {
	self, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("a pidfd of this process: %w", err)
	}
	defer func() { _ = unix.Close(self) }()
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
		Stderr:      os.Stderr,
		ExtraFiles:  []*os.File{theirs, prog.f},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		_ = unix.Close(fds[0])
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped should it end first
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	janitor.fd, janitor.proc, janitor.warn, janitor.told = fds[0], cmd.Process, warn, map[string][2]uint64{}
	janitorSend([]byte{msgServer}, self)
	if janitor.fd < 0 {
		return errors.New("the janitor took no message")
	}
	return nil
}

// janitorSend sends msg (with fd attached when fd >= 0) to the janitor,
// if one runs. A janitor that does not take it is killed and dropped.
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
			if janitor.warn != nil {
				janitor.warn("the process that removes this server's placeholders should it die stopped taking messages and was stopped; "+
					"a crash now leaves them until a later command reserves and releases them", err)
			}
		}
		return
	}
}

// janitorMaking tells the janitor of a placeholder of kind k (holding
// content) being made at tmp (st) to be renamed to path, in the directory
// dir.
func janitorMaking(tmp, path string, k kind, content string, st, dir *unix.Stat_t) {
	msg := fmt.Appendf([]byte{msgMaking, byte('0' + k)}, "%s\x00%d %d 0 0 %d %d\x00%s\x00%s",
		content, st.Dev, st.Ino, dir.Dev, dir.Ino, tmp, path)
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	if janitor.fd < 0 {
		return
	}
	janitorSend(msg, -1)
	janitor.told[path] = [2]uint64{st.Dev, st.Ino}
}

// janitorReserved tells the janitor of r, unless the placeholder is the
// one it last heard of at r.Path (made here, or held before).
func janitorReserved(r *Reservation) {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	if janitor.fd < 0 || janitor.told[r.Path] == [2]uint64{r.id.dev, r.id.ino} {
		return
	}
	janitorSend(fmt.Appendf([]byte{msgReserved, byte('0' + r.kind())}, "%s\x00%d %d %d %d %d %d\x00\x00%s",
		r.content, r.id.dev, r.id.ino, r.id.ctimeSec, r.id.ctimeNsec, r.dir.dev, r.dir.ino, r.Path), -1)
	janitor.told[r.Path] = [2]uint64{r.id.dev, r.id.ino}
}

// janitorReleased tells the janitor a release removed the placeholders at
// paths: it forgets them (so neither it nor this process grows with every
// path ever reserved).
func janitorReleased(paths []string) {
	if len(paths) == 0 {
		return
	}
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	if janitor.fd < 0 {
		return
	}
	msg := []byte{msgReleased}
	for i, p := range paths {
		if i > 0 {
			msg = append(msg, 0)
		}
		msg = append(msg, p...)
		delete(janitor.told, p)
	}
	janitorSend(msg, -1)
}

// janitorSandbox hands the janitor the sandbox's init p, and returns the
// number it goes by (0: not handed; p.close takes it back).
func janitorSandbox(p *initProcess) uint64 {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	if janitor.fd < 0 {
		return 0
	}
	janitor.seq++
	janitorSend(strconv.AppendUint([]byte{msgSandbox}, janitor.seq, 10), p.pidfd)
	if janitor.fd < 0 {
		return 0
	}
	return janitor.seq
}

// janitorEnded tells the janitor the init it knows as n has ended.
func janitorEnded(n uint64) {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	janitorSend(strconv.AppendUint([]byte{msgEnded}, n, 10), -1)
}

// janitorMain is the janitor: it reads its server's messages until the
// server is gone, ends the sandboxes it was handed, and removes the
// placeholders left. It exits 0 when it tried each, 1 when a sandbox or
// the server outlived janitorWait (nothing removed).
func janitorMain() int {
	_ = unix.Close(janitorFD + 1) // its own program
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	records := map[string]*janitorRecord{}
	server := -1
	inits := map[uint64]int{} // number: pidfd, -1 without one
	buf := make([]byte, 1<<17)
	oob := make([]byte, unix.CmsgSpace(4))
	for wait := 0; ; {
		n, oobn, _, _, err := unix.Recvmsg(janitorFD, buf, oob, unix.MSG_CMSG_CLOEXEC|wait)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			// Nothing more queued: take the next ones together, after a
			// pause (a command's placeholders come in dozens; waking for
			// each cost the server's commands 4% of their time).
			time.Sleep(janitorPause)
			wait = 0
			continue
		}
		if err != nil || n == 0 {
			break // the server is gone
		}
		wait = unix.MSG_DONTWAIT
		fd := receivedFD(oob[:oobn])
		msg := buf[:n]
		switch msg[0] {
		case msgServer:
			if server < 0 {
				server, fd = fd, -1
			}
		case msgMaking, msgReserved:
			if rec := parseRecord(msg[1:]); rec != nil {
				records[rec.r.Path] = rec
			}
		case msgReleased:
			for p := range bytes.SplitSeq(msg[1:], []byte{0}) {
				delete(records, string(p))
			}
		case msgSandbox, msgEnded:
			id, err := strconv.ParseUint(string(msg[1:]), 10, 64)
			if err != nil {
				break
			}
			if old, ok := inits[id]; ok && old >= 0 {
				_ = unix.Close(old)
			}
			delete(inits, id)
			if msg[0] == msgSandbox {
				inits[id], fd = fd, -1
			}
		}
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
	deadline := time.Now().Add(janitorWait)
	if server >= 0 && !(&initProcess{pidfd: server}).ended(time.Until(deadline)) {
		janitorSays("the server's process did not end", len(records))
		return 1
	}
	for _, fd := range inits {
		if fd >= 0 {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
	}
	for _, fd := range inits {
		if fd < 0 || !(&initProcess{pidfd: fd}).ended(time.Until(deadline)) {
			janitorSays("a sandbox of the server did not end", len(records))
			return 1
		}
	}
	if left := removeRecords(records); left > 0 {
		janitorSays("other commands hold them or they changed", left)
	}
	return 0
}

// janitorSays reports on standard error (the dead server's) that the
// janitor left n placeholders, and why.
func janitorSays(why string, n int) {
	_, _ = fmt.Fprintf(os.Stderr, "harness: %s; up to %d placeholders of its commands are left in place "+
		"(a later command of any harness reserves and releases them)\n", why, n)
}

// receivedFD returns the descriptor a message carried, or -1.
func receivedFD(oob []byte) int {
	cmsgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(cmsgs) == 0 {
		return -1
	}
	fds, err := unix.ParseUnixRights(&cmsgs[0])
	if err != nil || len(fds) == 0 {
		return -1
	}
	for _, extra := range fds[1:] {
		_ = unix.Close(extra)
	}
	return fds[0]
}

// janitorRecord is a placeholder the janitor was told of: r (its change
// time zero when it was told of before the rename), and tmp, the
// temporary name it was made under, when told of then.
type janitorRecord struct {
	r   *Reservation
	tmp string
}

// parseRecord reads a 'T' or 'R' message (after its type byte), or nil.
func parseRecord(b []byte) *janitorRecord {
	parts := bytes.SplitN(b, []byte{0}, 4)
	if len(parts) != 4 || len(parts[0]) < 1 {
		return nil
	}
	k := kind(parts[0][0] - '0')
	r := newReservation(string(parts[3]), k, string(parts[0][1:]))
	var nums [6]int64
	fields := bytes.Fields(parts[1])
	if len(fields) != len(nums) {
		return nil
	}
	for i, f := range fields {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return nil
		}
		nums[i] = v
	}
	r.id = fileIdentity{dev: uint64(nums[0]), ino: uint64(nums[1]), ctimeSec: nums[2], ctimeNsec: nums[3]}
	r.dir = fileIdentity{dev: uint64(nums[4]), ino: uint64(nums[5])}
	rec := &janitorRecord{r: r, tmp: string(parts[2])}
	if !filepath.IsAbs(r.Path) || r.kind() != k || rec.tmp != "" && filepath.Dir(rec.tmp) != filepath.Dir(r.Path) {
		return nil
	}
	return rec
}

// janitorTries is how many times the janitor tries the exclusive locks of
// the placeholders left, all together, 1, 2, 4, ... 256 ms apart (about
// half a second in all): a child the server forked just before it died
// holds a copy of its holds until that child's exec or end.
const janitorTries = 10

// removeRecords removes each record's placeholder that is still the one
// told of and that nothing holds within janitorTries, and what is left
// under a temporary name, and returns how many stay.
func removeRecords(records map[string]*janitorRecord) int {
	var pending []openPlaceholder
	dirs := dirFDs{}
	for _, rec := range records {
		if rec.tmp != "" {
			tmp := *rec.r
			tmp.Path = rec.tmp
			tmp.removeIn(dirs) // made, not yet renamed: whatever it holds by now
		}
		fd, err := rec.r.open()
		if err != nil {
			continue // gone, or something else there
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || !rec.r.id.matches(&st) {
			_ = unix.Close(fd) // not the one told of: not the janitor's
			continue
		}
		pending = append(pending, openPlaceholder{rec.r, fd})
	}
	dirs.close()
	left := 0
	removeUnlocked(pending, janitorTries, time.Millisecond, false, func(_ *Reservation, removed bool) {
		if !removed {
			left++
		}
	})
	return left
}
