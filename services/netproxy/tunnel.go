package netproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"
)

// tunnelBuffer is the copy buffer of each direction of a tunnel.
const tunnelBuffer = 32 << 10

// dial connects to the addresses v checked, in order, and returns the first
// connection made; it never resolves v.host again. The connection is held
// by the server (closed at shutdown).
func (s *server) dial(ctx context.Context, v verdict) (*conn, error) {
	d := net.Dialer{Timeout: s.p.limits.dial}
	var errs []error
	for _, a := range v.addrs {
		raw, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(v.port)).String())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c := &conn{Conn: raw}
		c.onClose = func() { s.untrack(c) }
		if !s.track(c) {
			_ = raw.Close()
			return nil, net.ErrClosed
		}
		return c, nil
	}
	return nil, errors.Join(errs...)
}

// tunnel copies bytes both ways between client and upstream until both
// sides have ended (an EOF is passed on as a half-close), either fails, or
// no byte moved either way for limits.tunnelIdle; then it closes both.
func (s *server) tunnel(client, upstream net.Conn) {
	t := &idleClock{idle: s.p.limits.tunnelIdle}
	t.touch()
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.pipe(client, upstream)
	}()
	t.pipe(upstream, client)
	<-done
	_ = client.Close()
	_ = upstream.Close()
}

// idleClock is the time of a tunnel's last byte, in either direction.
type idleClock struct {
	idle time.Duration
	last atomic.Int64
}

func (t *idleClock) touch() { t.last.Store(time.Now().UnixNano()) }

func (t *idleClock) deadline() time.Time { return time.Unix(0, t.last.Load()).Add(t.idle) }

// pipe copies src to dst. On EOF it half-closes dst; on any other end it
// closes both, which also ends the other direction.
func (t *idleClock) pipe(dst, src net.Conn) {
	if t.copy(dst, src) {
		return
	}
	_ = dst.Close()
	_ = src.Close()
}

// copy copies src to dst and reports whether src ended with EOF and dst
// was half-closed. A read that times out while the other direction is
// still moving is retried, so a long one-way transfer is not idle.
func (t *idleClock) copy(dst, src net.Conn) bool {
	buf := make([]byte, tunnelBuffer)
	for {
		_ = src.SetReadDeadline(t.deadline())
		n, err := src.Read(buf)
		if n > 0 {
			t.touch()
			_ = dst.SetWriteDeadline(t.deadline())
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return false
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded) && time.Now().Before(t.deadline()):
		case errors.Is(err, io.EOF):
			cw, ok := dst.(interface{ CloseWrite() error })
			return ok && cw.CloseWrite() == nil
		default:
			return false
		}
	}
}
