package netproxy

import (
	"context"
	"strings"

	"go.uber.org/zap"
)

// The protocols a decision names in the log ("via").
const (
	viaHTTP    = "http"
	viaConnect = "connect"
	viaSOCKS   = "socks5"
	viaDirect  = "direct"
)

// judge decides on host:port for one request, logs the decision at info
// and reports a refusal through onRefuse.
func (s *server) judge(ctx context.Context, via, host string, port int) verdict {
	v := s.p.decide(ctx, host, port, s.grants)
	fields := []zap.Field{
		zap.String("host", v.host), zap.Int("port", v.port), zap.String("via", via), zap.String("reason", v.reason),
	}
	switch v.outcome {
	case allowed:
		addrs := make([]string, len(v.addrs))
		for i, a := range v.addrs {
			addrs[i] = a.String()
		}
		s.log.Info("network access allowed", append(fields, zap.String("addresses", strings.Join(addrs, ",")))...)
	case refused:
		s.log.Info("network access refused", fields...)
		if s.onRefuse != nil {
			s.onRefuse(v.host, v.port, v.reason)
		}
	case failed:
		s.log.Info("network access failed", fields...)
	}
	if s.p.decided != nil {
		s.p.decided(v.outcome.String())
	}
	return v
}

// logDial logs a failed connection to an allowed host.
func (s *server) logDial(via string, v verdict, err error) {
	s.log.Info("network connection failed", zap.String("host", v.host), zap.Int("port", v.port),
		zap.String("via", via), zap.Error(err))
}
