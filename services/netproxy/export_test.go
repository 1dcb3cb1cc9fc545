package netproxy

import "time"

// Limits are the bounds a test may shorten; zero fields keep the default.
type Limits struct {
	Header, TunnelIdle time.Duration
	Conns              int
}

// SetLimits shortens p's bounds; call it before Serve.
func SetLimits(p *Proxy, l Limits) {
	if l.Header != 0 {
		p.limits.header = l.Header
	}
	if l.TunnelIdle != 0 {
		p.limits.tunnelIdle = l.TunnelIdle
	}
	if l.Conns != 0 {
		p.limits.conns = l.Conns
	}
}
