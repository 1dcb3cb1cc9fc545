package subproc

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// directStage is the helper's second argument for the short-lived process
// that makes the sockets of ListenAll inside a NetNS.
const directStage = "direct"

// MaxDirect bounds the sockets one ListenAll makes (one message of
// descriptors carries them back).
const MaxDirect = 128

// ListenAll returns a TCP listener inside the namespace on each of tcp and
// a UDP socket bound to each of udp, in order, made in one helper run:
// IPv4 loopback addresses (127.0.0.0/8), on any port, those below 1024 too;
// a TCP port 0 is one the kernel picks. A TCP listener may have another
// IPv4 unicast address: the namespace's loopback is given it first
// (giveLoopback). They are the domain proxy's listener, the addresses
// standing for the hosts a command may reach without a proxy (an allowed
// IP literal at its own address), and the namespace's name server.
//
// A server cannot enter the namespace itself (a multi-threaded process
// cannot change its user namespace), so a short-lived helper does: nsenter
// enters the namespaces as cred (nil: the server's user; it must be the
// namespace's), runs helper (the embedded helper or the harness binary,
// whose main calls Main first) in its direct stage, which makes the sockets unbound and hands
// them back over a socket pair (SCM_RIGHTS). The server binds them: the
// user namespace that owns the network namespace is its user's (or root's)
// own child, so the server holds the capability to bind ports below 1024
// there, which no command does. Each is checked to be a socket of its kind
// in this namespace before it is bound (fail closed: never one in the
// server's), and a listener to listen on its address after.
//
// Errors: the namespace was closed (ErrNetNSClosed); cred is not the one it
// was made for; the helper could not run or make the sockets (its
// message); an address that is not an IPv4 loopback one (or a UDP port
// 0), or more than MaxDirect in all; an address in use in the namespace
// (the bind's error, naming it). On error nothing is left open.
func (n *NetNS) ListenAll(helper *Program, cred *syscall.Credential, tcp, udp []netip.AddrPort) ([]net.Listener, []net.PacketConn, error) {
	if len(tcp)+len(udp) == 0 {
		return nil, nil, nil
	}
	if len(tcp)+len(udp) > MaxDirect {
		return nil, nil, fmt.Errorf("%d namespace sockets asked for, more than %d", len(tcp)+len(udp), MaxDirect)
	}
	kinds := make([]string, 0, len(tcp)+len(udp))
	for _, a := range tcp {
		if !a.Addr().Is4() || !a.Addr().IsLoopback() && !a.Addr().IsGlobalUnicast() && !a.Addr().IsLinkLocalUnicast() {
			return nil, nil, fmt.Errorf("a namespace listener's address %s is not an IPv4 unicast address", a)
		}
		kinds = append(kinds, "tcp")
	}
	for _, a := range udp {
		if !a.Addr().Is4() || !a.Addr().IsLoopback() || a.Port() == 0 {
			return nil, nil, fmt.Errorf("a namespace socket's address %s is not an IPv4 loopback address and port", a)
		}
		kinds = append(kinds, "udp")
	}
	fds, err := n.socketsFromInside(helper, cred, directStage, "listeners", kinds, len(kinds))
	if err != nil {
		return nil, nil, err
	}
	var lns []net.Listener
	var pcs []net.PacketConn
	fail := func(i int, err error) ([]net.Listener, []net.PacketConn, error) {
		for _, l := range lns {
			_ = l.Close()
		}
		for _, pc := range pcs {
			_ = pc.Close()
		}
		for _, fd := range fds[i:] {
			_ = unix.Close(fd)
		}
		return nil, nil, err
	}
	for i, fd := range fds {
		if i < len(tcp) {
			if err := n.bindInside(fd, tcp[i], unix.SOCK_STREAM); err != nil {
				return fail(i, err)
			}
			f := os.NewFile(uintptr(fd), "namespace-listener")
			ln, err := net.FileListener(f)
			_ = f.Close() // the listener holds a duplicate
			if err != nil {
				return fail(i+1, err)
			}
			lns = append(lns, ln)
			continue
		}
		if err := n.bindInside(fd, udp[i-len(tcp)], unix.SOCK_DGRAM); err != nil {
			return fail(i, err)
		}
		f := os.NewFile(uintptr(fd), "namespace-udp")
		pc, err := net.FilePacketConn(f)
		_ = f.Close() // the connection holds a duplicate
		if err != nil {
			return fail(i+1, err)
		}
		pcs = append(pcs, pc)
	}
	return lns, pcs, nil
}

// ListenDirect is ListenAll for TCP listeners only.
func (n *NetNS) ListenDirect(helper *Program, cred *syscall.Credential, addrs []netip.AddrPort) ([]net.Listener, error) {
	lns, _, err := n.ListenAll(helper, cred, addrs, nil)
	return lns, err
}

// bindInside binds fd, a socket the direct stage made, to want (and, for
// a stream socket, listens), after checking it is an IPv4 socket of type
// typ in this namespace; a listener is then checked (checkListenerAt).
func (n *NetNS) bindInside(fd int, want netip.AddrPort, typ int) error {
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	got, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err := errors.Join(err1, err2); err != nil || domain != unix.AF_INET || got != typ {
		return fmt.Errorf("the namespace's socket for %s is not of the kind asked for", want)
	}
	in, err := n.inside(fd)
	if err != nil || !in {
		// Fail closed: bound in the server's namespace, it would take
		// the host's port.
		return fmt.Errorf("the namespace's socket for %s is not inside the namespace", want)
	}
	// Another address than loopback's is bound before it is the
	// namespace's (IP_FREEBIND) and given only once the listener is made:
	// a bind that fails (a command took the port on 0.0.0.0) leaves no
	// address where the command's own listener would answer for the host.
	literal := !want.Addr().IsLoopback()
	if literal {
		if typ != unix.SOCK_STREAM {
			return fmt.Errorf("a namespace socket's address %s is not a loopback address", want)
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_FREEBIND, 1); err != nil {
			return fmt.Errorf("cannot bind %s inside the namespace: IP_FREEBIND: %w", want, err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: want.Addr().As4(), Port: int(want.Port())}); err != nil {
		return fmt.Errorf("cannot bind %s inside the namespace: %w", want, err)
	}
	if typ != unix.SOCK_STREAM {
		return nil
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		return fmt.Errorf("cannot listen on %s inside the namespace: %w", want, err)
	}
	if err := n.checkListenerAt(fd, want); err != nil {
		return err
	}
	if literal {
		if err := giveLoopback(fd, want.Addr()); err != nil {
			return fmt.Errorf("cannot give the namespace's loopback the address %s: %w", want.Addr(), err)
		}
	}
	return nil
}

// giveLoopback gives the loopback interface of fd's network namespace the
// IPv4 address a (a /32 alias named after the address, lo:0a000005 for
// 10.0.0.5; one given already is kept), so a connection to a inside the
// namespace reaches a listener there and nothing else changes (no route
// but a's own; between the two calls, for microseconds, the address's
// class is the loopback's: 10.0.0.0/8 for 10.0.0.5, inside the namespace
// only, and a socket a command bound there meanwhile is unreachable
// after). The ioctls act on the namespace of fd, a socket made
// inside it, and check the capability of their caller: the server holds
// CAP_NET_ADMIN over the namespace (its user namespace is a child of the
// server's user's), which no command does.
func giveLoopback(fd int, a netip.Addr) error {
	b := a.As4()
	label := fmt.Sprintf("lo:%02x%02x%02x%02x", b[0], b[1], b[2], b[3])
	set := func(req uint, addr []byte) error {
		ifr, err := unix.NewIfreq(label)
		if err != nil {
			return err
		}
		if err := ifr.SetInet4Addr(addr); err != nil {
			return err
		}
		return unix.IoctlIfreq(fd, req, ifr)
	}
	if err := set(unix.SIOCSIFADDR, b[:]); err != nil {
		return fmt.Errorf("SIOCSIFADDR %s: %w", label, err)
	}
	// SIOCSIFADDR gives the class's prefix (10.0.0.0/8 for 10.0.0.5),
	// which would make every address of it the loopback's.
	if err := set(unix.SIOCSIFNETMASK, []byte{255, 255, 255, 255}); err != nil {
		return fmt.Errorf("SIOCSIFNETMASK %s: %w", label, err)
	}
	return nil
}

// checkListenerAt verifies that fd is a listening TCP socket bound to want
// (any port for port 0) whose network namespace is this one.
func (n *NetNS) checkListenerAt(fd int, want netip.AddrPort) error {
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	accepting, err3 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	sa, err4 := unix.Getsockname(fd)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("cannot check the namespace's listener: %w", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if domain != unix.AF_INET || typ != unix.SOCK_STREAM || accepting != 1 || !ok || in4.Addr != want.Addr().As4() ||
		want.Port() != 0 && in4.Port != int(want.Port()) {
		return fmt.Errorf("the namespace's listener is not a TCP listener on %s", want)
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

// directMain is the direct stage, run by nsenter inside a NetNS: it makes
// one socket per argument, TCP for "tcp" and UDP for "udp" (at most
// MaxDirect), unbound, and sends them all on descriptor listenSockFD with
// listenOK, or sends why not; it returns 0 when a message went out.
func directMain(args []string) int {
	var err error
	if len(args) == 0 || len(args) > MaxDirect {
		err = fmt.Errorf("%d sockets asked for", len(args))
	}
	var fds []int
	for _, kind := range args {
		if err != nil {
			break
		}
		typ := unix.SOCK_STREAM
		switch kind {
		case "tcp":
		case "udp":
			typ = unix.SOCK_DGRAM
		default:
			err = fmt.Errorf("a socket of kind %q", kind)
			continue
		}
		var fd int
		if fd, err = unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0); err == nil {
			fds = append(fds, fd)
		}
	}
	return sendAllMade(fds, err, "cannot make sockets inside the namespace")
}
