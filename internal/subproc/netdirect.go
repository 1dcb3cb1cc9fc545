package subproc

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// directStage is the helper's second argument for the short-lived process
// that makes the listeners of ListenDirect inside a NetNS.
const directStage = "direct"

// MaxDirect bounds the listeners one ListenDirect makes (one message of
// descriptors carries them back).
const MaxDirect = 128

// ListenDirect returns a TCP listener inside the namespace on each of
// addrs, in order: loopback addresses (127.0.0.0/8) standing for the hosts
// a command may reach without a proxy, on any port, those below 1024 too.
// Like Listen's, a short-lived helper makes the sockets inside the
// namespace (as cred) and hands them back unbound; the server binds them:
// the user namespace that owns the network namespace is its user's (or
// root's) own child, so the server holds the capability to bind ports below
// 1024 there, which no command does. Each is checked to be a TCP socket of
// this namespace before it is bound, and listening on its address after.
//
// Errors: those of Listen; an address that is not an IPv4 loopback one, or
// more than MaxDirect of them; an address in use in the namespace (the
// bind's error, naming it).
func (n *NetNS) ListenDirect(helper *Program, cred *syscall.Credential, addrs []netip.AddrPort) ([]net.Listener, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	if len(addrs) > MaxDirect {
		return nil, fmt.Errorf("%d direct listeners asked for, more than %d", len(addrs), MaxDirect)
	}
	for _, a := range addrs {
		if !a.Addr().Is4() || !a.Addr().IsLoopback() || a.Port() == 0 {
			return nil, fmt.Errorf("a direct listener's address %s is not an IPv4 loopback address and port", a)
		}
	}
	fds, err := n.socketsFromInside(helper, cred, directStage, "direct listeners", []string{strconv.Itoa(len(addrs)), "tcp"}, len(addrs))
	if err != nil {
		return nil, err
	}
	out := make([]net.Listener, 0, len(fds))
	for i, fd := range fds {
		err := n.bindInside(fd, addrs[i])
		var ln net.Listener
		if err == nil {
			f := os.NewFile(uintptr(fd), "namespace-direct-listener")
			ln, err = net.FileListener(f)
			_ = f.Close() // the listener holds a duplicate
		} else {
			_ = unix.Close(fd)
		}
		if err != nil {
			for _, l := range out {
				_ = l.Close()
			}
			for _, fd := range fds[i+1:] {
				_ = unix.Close(fd)
			}
			return nil, err
		}
		out = append(out, ln)
	}
	return out, nil
}

// ListenPacket returns a UDP socket inside the namespace bound to addr,
// an IPv4 loopback address and port (below 1024 too), made as
// ListenDirect's listeners are: a name server for the commands inside.
// Errors: those of ListenDirect.
func (n *NetNS) ListenPacket(helper *Program, cred *syscall.Credential, addr netip.AddrPort) (net.PacketConn, error) {
	if !addr.Addr().Is4() || !addr.Addr().IsLoopback() || addr.Port() == 0 {
		return nil, fmt.Errorf("a namespace socket's address %s is not an IPv4 loopback address and port", addr)
	}
	fds, err := n.socketsFromInside(helper, cred, directStage, "name server socket", []string{"1", "udp"}, 1)
	if err != nil {
		return nil, err
	}
	fd := fds[0]
	if err := n.bindPacket(fd, addr); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "namespace-udp")
	defer f.Close() //nolint:errcheck // the connection holds a duplicate
	return net.FilePacketConn(f)
}

// bindPacket binds fd, a socket the direct stage made, to want, after
// checking it is a UDP socket of this namespace.
func (n *NetNS) bindPacket(fd int, want netip.AddrPort) error {
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err := errors.Join(err1, err2); err != nil || domain != unix.AF_INET || typ != unix.SOCK_DGRAM {
		return fmt.Errorf("the namespace's socket for %s is not a UDP socket", want)
	}
	if in, err := n.inside(fd); err != nil || !in {
		return fmt.Errorf("the namespace's socket for %s is not inside the namespace", want)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: want.Addr().As4(), Port: int(want.Port())}); err != nil {
		return fmt.Errorf("cannot bind %s inside the namespace: %w", want, err)
	}
	return nil
}

// bindInside binds fd, a socket the direct stage made, to want and
// listens, after checking it is an unbound TCP socket of this namespace,
// then checks the listener (checkListenerAt).
func (n *NetNS) bindInside(fd int, want netip.AddrPort) error {
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err := errors.Join(err1, err2); err != nil || domain != unix.AF_INET || typ != unix.SOCK_STREAM {
		return fmt.Errorf("the namespace's socket for %s is not a TCP socket", want)
	}
	in, err := n.inside(fd)
	if err != nil || !in {
		// Fail closed: bound in the server's namespace, it would take
		// the host's port.
		return fmt.Errorf("the namespace's socket for %s is not inside the namespace", want)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: want.Addr().As4(), Port: int(want.Port())}); err != nil {
		return fmt.Errorf("cannot listen on %s inside the namespace: %w", want, err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		return fmt.Errorf("cannot listen on %s inside the namespace: %w", want, err)
	}
	return n.checkListenerAt(fd, want)
}

// checkListenerAt verifies that fd is a listening TCP socket bound to want
// whose network namespace is this one.
func (n *NetNS) checkListenerAt(fd int, want netip.AddrPort) error {
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	accepting, err3 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	sa, err4 := unix.Getsockname(fd)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("cannot check the namespace's listener: %w", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if domain != unix.AF_INET || typ != unix.SOCK_STREAM || accepting != 1 || !ok || in4.Addr != want.Addr().As4() || in4.Port != int(want.Port()) {
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
// as many sockets as its first argument says (at most MaxDirect), TCP or
// UDP by its second, unbound, and sends them all on descriptor
// listenSockFD with listenOK, or sends why not; it returns 0 when a
// message went out.
func directMain(args []string) int {
	count := 0
	err := errors.New("no count and kind of sockets")
	typ := unix.SOCK_STREAM
	if len(args) == 2 && (args[1] == "tcp" || args[1] == "udp") {
		count, err = strconv.Atoi(args[0])
		if err == nil && (count < 1 || count > MaxDirect) {
			err = fmt.Errorf("%d sockets asked for", count)
		}
		if args[1] == "udp" {
			typ = unix.SOCK_DGRAM
		}
	}
	var fds []int
	for range count {
		if err != nil {
			break
		}
		var fd int
		if fd, err = unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0); err == nil {
			fds = append(fds, fd)
		}
	}
	return sendAllMade(fds, err, "cannot make sockets inside the namespace")
}
