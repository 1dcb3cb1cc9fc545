package subproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// diagStage is the helper's second argument for the short-lived process
// that makes a socket-diagnostics socket inside a NetNS (UnixDiag).
const diagStage = "diag"

// FileID is a file's identity: its device (as stat gives it) and inode.
type FileID struct{ Dev, Ino uint64 }

// UnixDiag asks the kernel which files the Unix sockets bound in one
// network namespace are bound to (sock_diag, NETLINK_SOCK_DIAG, with
// UDIAG_SHOW_VFS): the identity of each socket file, however it was named
// and wherever it has been renamed or linked to since, which no path in
// /proc/net/unix tells. Its methods are safe for concurrent use.
type UnixDiag struct {
	mu  sync.Mutex
	fd  int
	seq uint32
}

// UnixDiag returns a diagnostics socket made inside the namespace (by
// helper in its diag stage, as cred, as ListenAll does) and checked to be a
// NETLINK_SOCK_DIAG socket of this namespace (fail closed). Close it when
// done. Errors: ListenAll's, and a socket that is not such a one.
func (n *NetNS) UnixDiag(helper *Program, cred *syscall.Credential) (*UnixDiag, error) {
	fd, err := n.fromInside(helper, cred, diagStage, "socket diagnostics")
	if err != nil {
		return nil, err
	}
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	proto, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	in, err3 := n.inside(fd)
	if err := errors.Join(err1, err2, err3); err != nil || domain != unix.AF_NETLINK || proto != unix.NETLINK_SOCK_DIAG || !in {
		_ = unix.Close(fd)
		return nil, errors.Join(errors.New("the namespace's socket diagnostics are not a NETLINK_SOCK_DIAG socket inside it"), err)
	}
	return &UnixDiag{fd: fd}, nil
}

// Close closes the diagnostics socket.
func (d *UnixDiag) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// The sock_diag request and reply for AF_UNIX (linux/unix_diag.h).
const (
	udiagShowVFS  = 0x2 // UDIAG_SHOW_VFS
	unixDiagVFS   = 1   // UNIX_DIAG_VFS
	unixDiagReqSz = 24  // struct unix_diag_req
	unixDiagMsgSz = 16  // struct unix_diag_msg
)

// maxDiagMessages bounds the replies one dump reads (a socket a message).
const maxDiagMessages = 1 << 20

// Bound returns the identity of every file a Unix socket of the namespace
// is bound to now. Errors: the socket is closed; the kernel refused the
// dump or its reply could not be read (the caller fails closed).
func (d *UnixDiag) Bound() (map[FileID]bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return nil, os.ErrClosed
	}
	d.seq++
	req := make([]byte, unix.NLMSG_HDRLEN+unixDiagReqSz)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], d.seq)
	body := req[unix.NLMSG_HDRLEN:]
	body[0] = unix.AF_UNIX
	ne.PutUint32(body[4:], ^uint32(0)) // every state
	ne.PutUint32(body[12:], udiagShowVFS)
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("socket diagnostics: %w", err)
	}
	out := map[FileID]bool{}
	buf := make([]byte, 64<<10)
	for n := 0; n < maxDiagMessages; {
		k, _, err := unix.Recvfrom(d.fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("socket diagnostics: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:k])
		if err != nil {
			return nil, fmt.Errorf("socket diagnostics: %w", err)
		}
		for _, m := range msgs {
			n++
			if m.Header.Seq != d.seq {
				continue // an earlier dump's, cut short
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if e := int32(ne.Uint32(m.Data)); e != 0 {
						return nil, fmt.Errorf("socket diagnostics: %w", syscall.Errno(-e))
					}
				}
				return nil, errors.New("socket diagnostics: an error reply")
			}
			if id, ok := vfsOf(m.Data); ok {
				out[id] = true
			}
		}
	}
	return nil, fmt.Errorf("socket diagnostics: more than %d replies", maxDiagMessages)
}

// vfsOf returns the identity of the file a unix_diag_msg's socket is
// bound to, from its UNIX_DIAG_VFS attribute (false: none, an unbound or
// abstract socket). The attribute's device is the kernel's encoding
// (major << 20 | minor), turned into stat's.
func vfsOf(data []byte) (FileID, bool) {
	if len(data) < unixDiagMsgSz {
		return FileID{}, false
	}
	ne := binary.NativeEndian
	for a := data[unixDiagMsgSz:]; len(a) >= unix.SizeofRtAttr; {
		l, typ := int(ne.Uint16(a[0:])), ne.Uint16(a[2:])
		if l < unix.SizeofRtAttr || l > len(a) {
			return FileID{}, false
		}
		if typ == unixDiagVFS && l >= unix.SizeofRtAttr+8 {
			ino, dev := ne.Uint32(a[4:]), ne.Uint32(a[8:])
			return FileID{Dev: unix.Mkdev(dev>>20, dev&(1<<20-1)), Ino: uint64(ino)}, true
		}
		a = a[min(len(a), (l+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1)):]
	}
	return FileID{}, false
}

// diagMain is the diag stage, run by nsenter inside a NetNS: it makes a
// NETLINK_SOCK_DIAG socket and sends it on descriptor listenSockFD with
// listenOK, or sends why not; it returns 0 when a message went out.
func diagMain() int {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	return sendMade(fd, err, "cannot make a socket-diagnostics socket inside the namespace")
}
