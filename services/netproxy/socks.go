package netproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// SOCKS5 (RFC 1928) as far as harness serves it: no authentication, the
// CONNECT command, IPv4, domain-name and IPv6 addresses.
const (
	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff
	socksCmdConnect   = 0x01
	socksAtypIPv4     = 0x01
	socksAtypDomain   = 0x03
	socksAtypIPv6     = 0x04
)

// SOCKS5 reply codes (RFC 1928 section 6).
const (
	socksSucceeded        byte = 0x00
	socksGeneralFailure   byte = 0x01
	socksNotAllowed       byte = 0x02
	socksNetUnreachable   byte = 0x03
	socksHostUnreachable  byte = 0x04
	socksConnRefused      byte = 0x05
	socksCmdNotSupported  byte = 0x07
	socksAddrNotSupported byte = 0x08
)

// serveSOCKS serves one SOCKS5 connection: the negotiation (within
// limits.header), the decision, the reply, then the tunnel.
func (s *server) serveSOCKS(c *conn) {
	_ = c.SetDeadline(time.Now().Add(s.p.limits.header))
	host, port, rep, err := readSOCKSRequest(c)
	if err != nil {
		if rep != socksSucceeded {
			_ = writeSOCKSReply(c, rep, nil)
		}
		s.log.Debug("bad SOCKS5 request", zap.Stringer("client", c.RemoteAddr()), zap.Error(err))
		_ = c.Close()
		return
	}
	v := s.judge(s.ctx, viaSOCKS, host, port)
	switch v.outcome {
	case refused:
		_ = writeSOCKSReply(c, socksNotAllowed, nil)
		_ = c.Close()
		return
	case failed:
		_ = writeSOCKSReply(c, socksHostUnreachable, nil)
		_ = c.Close()
		return
	}
	upstream, err := s.dial(s.ctx, v)
	if err != nil {
		s.logDial(viaSOCKS, v, err)
		_ = writeSOCKSReply(c, dialReply(err), nil)
		_ = c.Close()
		return
	}
	if err := writeSOCKSReply(c, socksSucceeded, upstream.LocalAddr()); err != nil {
		_ = c.Close()
		_ = upstream.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	s.tunnel(c, upstream)
}

// readSOCKSRequest reads the method negotiation (answering it) and the
// request, and returns the destination. On error, rep is the reply to send
// ("succeeded" when none is due: the client is not speaking SOCKS5 or no
// method was agreed).
func readSOCKSRequest(c io.ReadWriter) (host string, port int, rep byte, err error) {
	var head [2]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return "", 0, socksSucceeded, err
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return "", 0, socksSucceeded, err
	}
	method := byte(socksNoAcceptable)
	for _, m := range methods {
		if m == socksNoAuth {
			method = socksNoAuth
		}
	}
	if _, err := c.Write([]byte{socksVersion, method}); err != nil {
		return "", 0, socksSucceeded, err
	}
	if method != socksNoAuth {
		return "", 0, socksSucceeded, errors.New("the client offers no method without authentication")
	}
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil {
		return "", 0, socksSucceeded, err
	}
	switch {
	case req[0] != socksVersion:
		return "", 0, socksGeneralFailure, fmt.Errorf("request version %d", req[0])
	case req[1] != socksCmdConnect:
		return "", 0, socksCmdNotSupported, fmt.Errorf("command %d is not CONNECT", req[1])
	}
	switch req[3] {
	case socksAtypIPv4, socksAtypIPv6:
		b := make([]byte, map[byte]int{socksAtypIPv4: 4, socksAtypIPv6: 16}[req[3]])
		if _, err := io.ReadFull(c, b); err != nil {
			return "", 0, socksGeneralFailure, err
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.String()
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return "", 0, socksGeneralFailure, err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(c, b); err != nil {
			return "", 0, socksGeneralFailure, err
		}
		host = string(b)
	default:
		return "", 0, socksAddrNotSupported, fmt.Errorf("address type %d", req[3])
	}
	var p [2]byte
	if _, err := io.ReadFull(c, p[:]); err != nil {
		return "", 0, socksGeneralFailure, err
	}
	port = int(binary.BigEndian.Uint16(p[:]))
	if port == 0 {
		return "", 0, socksGeneralFailure, errors.New("port 0")
	}
	return host, port, socksSucceeded, nil
}

// writeSOCKSReply writes reply rep with the bound address bound (the
// upstream connection's local address; 0.0.0.0:0 when nil).
func writeSOCKSReply(w io.Writer, rep byte, bound net.Addr) error {
	ap := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	if t, ok := bound.(*net.TCPAddr); ok {
		ap = t.AddrPort()
	}
	a := ap.Addr().Unmap()
	atyp := byte(socksAtypIPv4)
	if a.Is6() {
		atyp = socksAtypIPv6
	}
	b := append([]byte{socksVersion, rep, 0x00, atyp}, a.AsSlice()...)
	b = binary.BigEndian.AppendUint16(b, ap.Port())
	_, err := w.Write(b)
	return err
}

// dialReply is the SOCKS5 reply to a failed dial.
func dialReply(err error) byte {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksConnRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ETIMEDOUT):
		return socksHostUnreachable
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return socksHostUnreachable
		}
		return socksGeneralFailure
	}
}
