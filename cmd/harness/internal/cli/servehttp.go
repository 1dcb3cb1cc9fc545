package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
)

// serveHTTP serves srv over Streamable HTTP on cfg.Listen (issue 26) until
// ctx ends, then drains: new sessions and calls are refused while the
// calls in flight finish, for at most cfg.ShutdownTimeout, and the server
// closes. It writes one line to stderr once it listens:
// "harness: listening on http://HOST:PORT/mcp".
func serveHTTP(ctx context.Context, srv *mcpserver.Server, cfg config.Config, env Env, logger *zap.Logger) error {
	opts, err := httpOptions(ctx, cfg, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	opts.AllowedHosts = allowedHosts(cfg, ln.Addr())
	if len(opts.AllowedHosts) == 0 {
		logger.Warn("listening on every interface without --allowed-host: the Host header is not checked; name the public host with --allowed-host")
	}
	h := srv.HTTPHandler(opts)
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
		// The standard library's own complaints (a TLS handshake
		// refused) go to the log at debug, never a token: it logs none.
		ErrorLog: log.New(zapWriter{logger.Named("http")}, "", 0),
	}
	scheme := "http"
	if cfg.TLSCert != "" {
		scheme = "https"
	}
	served := make(chan error, 1)
	go func() {
		if cfg.TLSCert != "" {
			served <- hs.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
			return
		}
		served <- hs.Serve(ln)
	}()
	_, _ = fmt.Fprintf(env.Stderr, "harness: listening on %s://%s%s\n", scheme, ln.Addr(), mcpserver.EndpointPath)
	select {
	case err := <-served:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	timeout := cmp.Or(cfg.ShutdownTimeout, config.DefaultShutdownTimeout)
	logger.Info("stopping: draining the calls in flight", zap.Duration("timeout", timeout))
	dctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := h.Drain(dctx); err != nil {
		logger.Warn("calls were still running when the shutdown timeout passed: they are cancelled", zap.Duration("timeout", timeout))
	}
	// The calls are done; open streams (a session's GET) end with the
	// base context, and Shutdown waits for the last responses to go out.
	cancelBase()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP: %w", err)
	}
	return nil
}

// httpOptions returns the front end's options from cfg.
func httpOptions(_ context.Context, cfg config.Config, _ *zap.Logger) (mcpserver.HTTPOptions, error) {
	return mcpserver.HTTPOptions{
		AllowedOrigins:    cfg.AllowedOrigins,
		SessionIdle:       cmp.Or(cfg.SessionIdle, config.DefaultSessionIdle),
		MaxRequestBytes:   cmp.Or(cfg.MaxRequestBytes, int64(maxLineBytes(cfg))),
		PrincipalMaxCalls: cmp.Or(cfg.PrincipalMaxCalls, config.DefaultPrincipalMaxCalls),
	}, nil
}

// allowedHosts returns the Host header values served: the listen
// address's own host and, on loopback, every loopback name, each with the
// port bound, plus --allowed-host. Listening on every interface without
// --allowed-host, none: any Host is served.
func allowedHosts(cfg config.Config, addr net.Addr) []string {
	host, _, _ := net.SplitHostPort(cfg.Listen)
	_, port, _ := net.SplitHostPort(addr.String())
	ip := net.ParseIP(host)
	every := host == "" || (ip != nil && ip.IsUnspecified())
	if every && len(cfg.AllowedHosts) == 0 {
		return nil
	}
	var out []string
	if !every {
		out = append(out, net.JoinHostPort(host, port))
	}
	if every || config.ListenLoopback(cfg.Listen) {
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			out = append(out, net.JoinHostPort(h, port))
		}
	}
	return append(out, cfg.AllowedHosts...)
}

// zapWriter turns the standard library's log lines into debug records.
type zapWriter struct{ log *zap.Logger }

func (w zapWriter) Write(p []byte) (int, error) {
	w.log.Debug(strconv.Quote(string(p)))
	return len(p), nil
}
