package cli

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/httpauth"
	"github.com/dsh-go/harness/services/metrics"
	"github.com/dsh-go/harness/services/principal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/toolfs"
)

// serveHTTP serves srv over Streamable HTTP on cfg.Listen (issue 26) until
// ctx ends, then drains: new sessions and calls are refused while the
// calls in flight finish, for at most cfg.ShutdownTimeout, and the server
// closes. It writes one line to stderr once it listens:
// "harness: listening on http://HOST:PORT/mcp".
func serveHTTP(ctx context.Context, srv *mcpserver.Server, cfg config.Config, env Env, principals *principal.Set, m *metrics.Metrics, logger *zap.Logger) error {
	opts, err := httpOptions(ctx, cfg, principals, logger)
	if err != nil {
		return err
	}
	if m != nil {
		opts.Metrics = m.Handler()
	}
	if cfg.TLSCert != "" {
		if err := checkTLS(cfg.TLSCert, cfg.TLSKey); err != nil {
			return err
		}
	}
	if opts.Authenticate == nil {
		if os.Geteuid() == 0 {
			return &config.FieldError{Key: "listen", Msg: "serving HTTP as root without --token-file or --jwks-url would let every local user act as root through the tools; give --token-file, or run serve as an ordinary user"}
		}
		logger.Warn("serving HTTP without authentication: every local user can reach this server and act as its user; give --token-file to require a token")
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
	// The calls are done: the sessions end (their background commands
	// stop, their temp directories go), open streams (a session's GET)
	// end with the base context, and Shutdown waits for the last
	// responses to go out.
	h.CloseSessions()
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

// httpOptions returns the front end's options from cfg: the token
// verifier (--token-file or --jwks-url) behind the bearer middleware, the
// protected-resource metadata, the principals (the graph's, loaded from
// --principals), the caps.
func httpOptions(ctx context.Context, cfg config.Config, principals *principal.Set, logger *zap.Logger) (mcpserver.HTTPOptions, error) {
	sessions, _, _, _, _ := cfg.PrincipalCaps()
	opts := mcpserver.HTTPOptions{
		PrincipalMaxSessions: sessions,
		AllowedOrigins:       cfg.AllowedOrigins,
		SessionIdle:          cmp.Or(cfg.SessionIdle, config.DefaultSessionIdle),
		MaxRequestBytes:      cmp.Or(cfg.MaxRequestBytes, maxRequestBytes(cfg)),
		PrincipalMaxCalls:    cfg.PrincipalMaxCalls,
		Mode:                 sandbox.Mode(cfg.Mode),
		TempDir:              os.TempDir(),
	}
	if len(cfg.TempRoots) > 0 {
		opts.TempDir = cfg.TempRoots[0]
	}
	var verify auth.TokenVerifier
	switch {
	case cfg.TokenFile != "":
		tf, err := httpauth.LoadTokenFile(cfg.TokenFile)
		if err != nil {
			return opts, fmt.Errorf("--token-file: %w", err)
		}
		verify = tf.Verify
	case cfg.JWKSURL != "":
		jv, err := httpauth.NewJWTVerifier(ctx, httpauth.JWTOptions{
			JWKSURL: cfg.JWKSURL, Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, Log: logger.Named("auth"),
		})
		if err != nil {
			return opts, fmt.Errorf("--jwks-url: %w", err)
		}
		verify = jv.Verify
	}
	if verify != nil {
		resource := func(r *http.Request) string {
			if cfg.ResourceURL != "" {
				return cfg.ResourceURL
			}
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			// The Host was checked against the served names first.
			return scheme + "://" + r.Host + mcpserver.EndpointPath
		}
		opts.Authenticate = httpauth.Middleware(verify, httpauth.MiddlewareOptions{
			ResourceMetadataURL: func(r *http.Request) string {
				u, err := httpauth.MetadataURL(resource(r))
				if err != nil {
					return ""
				}
				return u
			},
			Log: logger.Named("auth"),
		})
		servers := cfg.AuthorizationServers
		if len(servers) == 0 && cfg.JWKSURL != "" {
			// A client signs in where the tokens come from: the issuer
			// they are verified against.
			servers = []string{cfg.JWTIssuer}
		}
		opts.Metadata = httpauth.MetadataHandler(httpauth.MetadataOptions{Resource: resource, AuthorizationServers: servers})
	}
	if principals != nil {
		opts.Principals = principals
		logger.Info("principals", zap.Strings("names", principals.Names()))
	}
	return opts, nil
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

// maxRequestBytes is the default cap of an HTTP request body: twice the
// largest write the tools accept plus 1 MiB (33 MiB by default), enough
// for a write whose content JSON escapes little; stdio's bound is looser
// (maxLineBytes), but a body over HTTP is decoded in memory several times
// its size, many at once.
func maxRequestBytes(cfg config.Config) int64 {
	limit := cfg.WriteMaxBytes
	if limit == 0 {
		limit = toolfs.DefaultWriteMaxBytes
	}
	return 2*int64(limit) + 1<<20
}

// checkTLS loads the certificate and key before serving, so a bad pair
// stops the start rather than every handshake, and refuses a key file its
// group or others may read.
func checkTLS(cert, key string) error {
	info, err := os.Stat(key)
	if err != nil {
		return &config.FieldError{Key: "tls-key", Msg: err.Error()}
	}
	if info.Mode().Perm()&0o077 != 0 {
		return &config.FieldError{Key: "tls-key", Msg: fmt.Sprintf("%s may be read by its group or others (mode %#o): anyone who reads it can pose as this server; run chmod 600 on it", key, info.Mode().Perm())}
	}
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		return &config.FieldError{Key: "tls-cert", Msg: fmt.Sprintf("the certificate and key do not load: %v", err)}
	}
	return nil
}

// serveMetrics serves m at http://addr/metrics (and nothing else), without
// authentication (--metrics-listen, issue 39), until the returned func is
// called. It writes one line to stderr once it listens:
// "harness: metrics at http://HOST:PORT/metrics".
func serveMetrics(addr string, m *metrics.Metrics, env Env, logger *zap.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	if !config.ListenLoopback(addr) {
		logger.Warn("serving metrics off loopback without authentication: anyone who reaches this address reads them", zap.String("address", ln.Addr().String()))
	}
	mux := http.NewServeMux()
	mux.Handle(mcpserver.MetricsPath, m.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(zapWriter{logger.Named("metrics")}, "", 0)}
	go func() { _ = hs.Serve(ln) }()
	_, _ = fmt.Fprintf(env.Stderr, "harness: metrics at http://%s%s\n", ln.Addr(), mcpserver.MetricsPath)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
	}, nil
}
