package config

import (
	"cmp"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-go/harness/services/telemetry"
	"github.com/dsh-go/harness/services/toolexec"
)

// HTTP is the configuration of `harness serve --listen` (issue 26): the
// Streamable HTTP front end, its authentication and its limits. YAML keys
// are the flag names; every field is ignored without Listen.
type HTTP struct {
	// Listen is the host:port serve listens on for Streamable HTTP ("" for
	// stdio); an empty host is every interface.
	Listen string `yaml:"listen"`
	// MetricsListen is the host:port serve serves Prometheus metrics on at
	// /metrics, without authentication, over stdio or HTTP ("" for none;
	// an empty host is 127.0.0.1). With Listen they are at /metrics there
	// too, behind its authentication (issue 39).
	MetricsListen string `yaml:"metrics-listen"`
	// OTLPEndpoint is the base URL of an OTLP/HTTP receiver serve exports
	// each call's span, its audit record and the metrics to (issue 39;
	// services/telemetry); "" leaves it to the OTEL_EXPORTER_OTLP_*
	// variables (OTLPFromEnv).
	OTLPEndpoint string `yaml:"otlp-endpoint"`
	// OTLPFromEnv is set when the environment names a receiver
	// (telemetry.EnvEndpoints) and does not set OTEL_SDK_DISABLED=true.
	OTLPFromEnv bool `yaml:"-"`
	// TokenFile is a file of hashed static bearer tokens, one
	// "SUBJECT sha256:HEX" a line (services/httpauth).
	TokenFile string `yaml:"token-file"`
	// JWKSURL, JWTIssuer and JWTAudience verify bearer JWTs as an OAuth 2.1
	// resource server: the signing keys come from the JWKS URL, iss and aud
	// must match.
	JWKSURL     string `yaml:"jwks-url"`
	JWTIssuer   string `yaml:"jwt-issuer"`
	JWTAudience string `yaml:"jwt-audience"`
	// AuthorizationServers are listed in the protected-resource metadata.
	AuthorizationServers []string `yaml:"authorization-server"`
	// ResourceURL is the public URL of the MCP endpoint; "" derives it
	// from each request's (checked) Host.
	ResourceURL string `yaml:"resource-url"`
	// Principals is the YAML file mapping each token subject to its
	// workspaces and modes (services/principal).
	Principals string `yaml:"principals"`
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// requests are served; a request with another Origin gets 403.
	AllowedOrigins []string `yaml:"allowed-origin"`
	// AllowedHosts are Host header values served besides the listen
	// address's own (host, or host:port).
	AllowedHosts []string `yaml:"allowed-host"`
	// SessionIdle ends a session that sent no request for this long; 0
	// means DefaultSessionIdle.
	SessionIdle time.Duration `yaml:"session-idle"`
	// MaxRequestBytes caps one request body; 0 sizes it to the largest
	// write the tools accept.
	MaxRequestBytes int64 `yaml:"max-request-bytes"`
	// PrincipalMaxCalls caps one principal's tool calls running at once
	// (a principal's own max-concurrent-calls wins); 0 means half the
	// process's cap (--max-concurrent-calls), at least 1.
	PrincipalMaxCalls int `yaml:"principal-max-calls"`
	// PrincipalMaxSessions caps one principal's sessions at once; 0 means
	// DefaultPrincipalMaxSessions.
	PrincipalMaxSessions int `yaml:"principal-max-sessions"`
	// PrincipalMaxCommands caps one principal's commands running at once
	// of the server's 4; 0 means half of them (2).
	PrincipalMaxCommands int `yaml:"principal-max-commands"`
	// PrincipalMaxBackground caps one principal's background commands
	// running at once over its sessions; 0 means
	// DefaultPrincipalMaxBackground.
	PrincipalMaxBackground int `yaml:"principal-max-background"`
	// PrincipalExecMemory caps the memory one principal's running commands
	// may take in all (the sum of their --exec-memory caps): a size as
	// --exec-memory takes, "none", or "" for DefaultPrincipalExecMemory.
	PrincipalExecMemory string `yaml:"principal-exec-memory"`
	// PrincipalExecPids caps the processes one principal's running
	// commands may run in all (the sum of their --exec-pids caps); 0 means
	// DefaultPrincipalExecPids, -1 none.
	PrincipalExecPids int `yaml:"principal-exec-pids"`
	// TLSCert and TLSKey serve HTTPS.
	TLSCert string `yaml:"tls-cert"`
	TLSKey  string `yaml:"tls-key"`
	// ShutdownTimeout bounds the drain of the calls in flight when serve
	// is told to stop; 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration `yaml:"shutdown-timeout"`
}

// HTTP defaults.
const (
	DefaultSessionIdle     = 30 * time.Minute
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultPrincipalMaxSessions is a principal's sessions at once: a
	// team of agents sharing one token, not a flood.
	DefaultPrincipalMaxSessions = 128
	// DefaultPrincipalMaxBackground is a principal's background commands
	// at once over its sessions (two sessions' worth).
	DefaultPrincipalMaxBackground = 16
	// DefaultPrincipalExecMemory is the memory a principal's running
	// commands may take in all: 8 commands at the default --exec-memory.
	DefaultPrincipalExecMemory = 16 << 30
	// DefaultPrincipalExecPids is the processes a principal's running
	// commands may run in all: 8 commands at the default --exec-pids.
	DefaultPrincipalExecPids = 4096
)

// httpFlags registers the flags of HTTP on fs and returns, for each flag
// name, the function that copies its value into a Config.
func httpFlags(fs *flag.FlagSet) map[string]func(*Config) {
	var (
		listen      = fs.String("listen", "", "serve MCP over Streamable HTTP at `ADDR` (host:port, path /mcp) instead of stdio; 127.0.0.1:0 picks a free port; off loopback --token-file or --jwks-url is required")
		metrics     = fs.String("metrics-listen", "", "serve Prometheus metrics at http://`ADDR`/metrics without authentication (host:port; :9464 is 127.0.0.1:9464), over stdio or --listen (where they are at /metrics too, behind its authentication)")
		otlp        = fs.String("otlp-endpoint", "", "export each call as a span, its audit record as a log record and the metrics over OTLP/HTTP to the receiver at base `URL` (such as http://127.0.0.1:4318; its /v1/traces, /v1/logs, /v1/metrics); the OTEL_EXPORTER_OTLP_* variables work too")
		tokenFile   = fs.String("token-file", "", "a `FILE` of hashed bearer tokens, one \"SUBJECT sha256:HEX\" a line (HEX: the token's SHA-256)")
		jwks        = fs.String("jwks-url", "", "verify bearer JWTs against the signing keys at `URL` (an OAuth 2.1 resource server; needs --jwt-issuer and --jwt-audience)")
		issuer      = fs.String("jwt-issuer", "", "the `ISSUER` a JWT's iss must equal")
		audience    = fs.String("jwt-audience", "", "the `AUDIENCE` a JWT's aud must contain")
		resource    = fs.String("resource-url", "", "the public `URL` of the MCP endpoint, for the protected-resource metadata (default: from the request's Host)")
		principals  = fs.String("principals", "", "a YAML `FILE` mapping each token subject to its workspaces, mode and widest mode")
		idle        = fs.Duration("session-idle", 0, "end an HTTP session that sent nothing for this `duration` (0: 30m)")
		maxBody     = fs.Int64("max-request-bytes", 0, "`bytes` of one HTTP request body at most; one principal's large bodies in flight together at most twice this (0: 2x --write-max-bytes + 1 MiB, 33 MiB)")
		perPrinc    = fs.Int("principal-max-calls", 0, "tool `calls` one principal runs at once over HTTP; more wait for a slot, round-robin between principals (0: half of --max-concurrent-calls' cap, at least 1)")
		perSess     = fs.Int("principal-max-sessions", 0, "HTTP `sessions` one principal has at once; a session past it is refused with PRINCIPAL_SESSION_LIMIT (0: 128)")
		perCmds     = fs.Int("principal-max-commands", 0, "`commands` one principal runs at once of the server's 4; more wait, round-robin between principals (0: 2)")
		perBg       = fs.Int("principal-max-background", 0, "background `commands` one principal runs at once over its sessions; one more is refused with EXEC_PRINCIPAL_LIMIT (0: 16)")
		perMem      = fs.String("principal-exec-memory", "", "memory one principal's running commands may take in all, the sum of their --exec-memory caps (`size`; none: no cap; default 16G); a command past it is refused with EXEC_PRINCIPAL_LIMIT")
		perPids     = fs.Int("principal-exec-pids", 0, "processes one principal's running commands may run in all, the sum of their --exec-pids caps (`count`; -1: no cap; 0: 4096); a command past it is refused with EXEC_PRINCIPAL_LIMIT")
		tlsCert     = fs.String("tls-cert", "", "serve HTTPS with this certificate `FILE` (PEM; with --tls-key)")
		tlsKey      = fs.String("tls-key", "", "the private key `FILE` of --tls-cert (PEM)")
		drain       = fs.Duration("shutdown-timeout", 0, "on SIGTERM or SIGINT, how long the HTTP server lets the calls in flight finish (`duration`) before it closes (0: 30s)")
		authServers stringList
		origins     stringList
		hosts       stringList
	)
	fs.Var(&authServers, "authorization-server", "an OAuth authorization server `URL` the protected-resource metadata lists (repeatable; with --jwks-url, default: the --jwt-issuer)")
	fs.Var(&origins, "allowed-origin", "a browser `ORIGIN` (scheme://host[:port]) whose requests are served; any other Origin gets 403 (repeatable)")
	fs.Var(&hosts, "allowed-host", "a `HOST` (or host:port) the Host header may name besides the listen address, e.g. the public name behind a proxy (repeatable)")
	return map[string]func(*Config){
		"listen":                   func(c *Config) { c.Listen = *listen },
		"metrics-listen":           func(c *Config) { c.MetricsListen = *metrics },
		"otlp-endpoint":            func(c *Config) { c.OTLPEndpoint = *otlp },
		"token-file":               func(c *Config) { c.TokenFile = *tokenFile },
		"jwks-url":                 func(c *Config) { c.JWKSURL = *jwks },
		"jwt-issuer":               func(c *Config) { c.JWTIssuer = *issuer },
		"jwt-audience":             func(c *Config) { c.JWTAudience = *audience },
		"resource-url":             func(c *Config) { c.ResourceURL = *resource },
		"principals":               func(c *Config) { c.Principals = *principals },
		"session-idle":             func(c *Config) { c.SessionIdle = *idle },
		"max-request-bytes":        func(c *Config) { c.MaxRequestBytes = *maxBody },
		"principal-max-calls":      func(c *Config) { c.PrincipalMaxCalls = *perPrinc },
		"principal-max-sessions":   func(c *Config) { c.PrincipalMaxSessions = *perSess },
		"principal-max-commands":   func(c *Config) { c.PrincipalMaxCommands = *perCmds },
		"principal-max-background": func(c *Config) { c.PrincipalMaxBackground = *perBg },
		"principal-exec-memory":    func(c *Config) { c.PrincipalExecMemory = *perMem },
		"principal-exec-pids":      func(c *Config) { c.PrincipalExecPids = *perPids },
		"tls-cert":                 func(c *Config) { c.TLSCert = *tlsCert },
		"tls-key":                  func(c *Config) { c.TLSKey = *tlsKey },
		"shutdown-timeout":         func(c *Config) { c.ShutdownTimeout = *drain },
		"authorization-server":     func(c *Config) { c.AuthorizationServers = authServers },
		"allowed-origin":           func(c *Config) { c.AllowedOrigins = origins },
		"allowed-host":             func(c *Config) { c.AllowedHosts = hosts },
	}
}

// httpEnv reads the HARNESS_* variables of HTTP; lists are separated by
// commas or white space.
func httpEnv(c *Config, lookup func(string) string) error {
	for _, s := range []struct {
		name string
		dst  *string
	}{
		{"LISTEN", &c.Listen},
		{"METRICS_LISTEN", &c.MetricsListen},
		{"OTLP_ENDPOINT", &c.OTLPEndpoint},
		{"TOKEN_FILE", &c.TokenFile},
		{"JWKS_URL", &c.JWKSURL},
		{"JWT_ISSUER", &c.JWTIssuer},
		{"JWT_AUDIENCE", &c.JWTAudience},
		{"RESOURCE_URL", &c.ResourceURL},
		{"PRINCIPALS", &c.Principals},
		{"PRINCIPAL_EXEC_MEMORY", &c.PrincipalExecMemory},
		{"TLS_CERT", &c.TLSCert},
		{"TLS_KEY", &c.TLSKey},
	} {
		if v := lookup(s.name); v != "" {
			*s.dst = v
		}
	}
	for _, l := range []struct {
		name string
		dst  *[]string
	}{{"AUTHORIZATION_SERVER", &c.AuthorizationServers}, {"ALLOWED_ORIGIN", &c.AllowedOrigins}, {"ALLOWED_HOST", &c.AllowedHosts}} {
		if v := lookup(l.name); v != "" {
			*l.dst = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
		}
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"SESSION_IDLE", &c.SessionIdle}, {"SHUTDOWN_TIMEOUT", &c.ShutdownTimeout}} {
		if v := lookup(d.name); v != "" {
			n, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s%s: not a duration (such as 10m): %q", EnvPrefix, d.name, v)
			}
			*d.dst = n
		}
	}
	if v := lookup("MAX_REQUEST_BYTES"); v != "" {
		var n int64
		if _, err := fmt.Sscan(v, &n); err != nil || fmt.Sprint(n) != v {
			return fmt.Errorf("%sMAX_REQUEST_BYTES: not an integer: %q", EnvPrefix, v)
		}
		c.MaxRequestBytes = n
	}
	for _, i := range []struct {
		name string
		dst  *int
	}{
		{"PRINCIPAL_MAX_CALLS", &c.PrincipalMaxCalls},
		{"PRINCIPAL_MAX_SESSIONS", &c.PrincipalMaxSessions},
		{"PRINCIPAL_MAX_COMMANDS", &c.PrincipalMaxCommands},
		{"PRINCIPAL_MAX_BACKGROUND", &c.PrincipalMaxBackground},
		{"PRINCIPAL_EXEC_PIDS", &c.PrincipalExecPids},
	} {
		if v := lookup(i.name); v != "" {
			var n int
			if _, err := fmt.Sscan(v, &n); err != nil || fmt.Sprint(n) != v {
				return fmt.Errorf("%s%s: not an integer: %q", EnvPrefix, i.name, v)
			}
			*i.dst = n
		}
	}
	return nil
}

// ListenLoopback reports whether addr (host:port) listens on loopback
// only: localhost or a loopback address. An empty host, 0.0.0.0 or :: is
// every interface.
func ListenLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validateHTTP checks the fields of HTTP; they need Listen.
func (c *Config) validateHTTP() error {
	if c.OTLPEndpoint != "" {
		if err := telemetry.CheckEndpoint(c.OTLPEndpoint); err != nil {
			return fieldErr("otlp-endpoint", "%s", err.Error())
		}
	}
	if c.MetricsListen != "" {
		host, port, err := net.SplitHostPort(c.MetricsListen)
		if err != nil || port == "" {
			return fieldErr("metrics-listen", "%q is not host:port (such as 127.0.0.1:9464, or :9464 for loopback)", c.MetricsListen)
		}
		if host != "" && !strings.EqualFold(host, "localhost") && net.ParseIP(host) == nil {
			return fieldErr("metrics-listen", "%q: give an address or localhost, not a name (a name may resolve off loopback)", c.MetricsListen)
		}
		if host == "" {
			// Loopback unless an address is named: the metrics need no
			// token.
			c.MetricsListen = net.JoinHostPort("127.0.0.1", port)
		}
	}
	if c.Listen == "" {
		for _, f := range []struct {
			key string
			set bool
		}{
			{"token-file", c.TokenFile != ""},
			{"jwks-url", c.JWKSURL != ""},
			{"principals", c.Principals != ""},
			{"tls-cert", c.TLSCert != ""},
			{"tls-key", c.TLSKey != ""},
			{"allowed-origin", len(c.AllowedOrigins) > 0},
			{"allowed-host", len(c.AllowedHosts) > 0},
			{"resource-url", c.ResourceURL != ""},
			{"principal-max-sessions", c.PrincipalMaxSessions != 0},
			{"principal-max-commands", c.PrincipalMaxCommands != 0},
			{"principal-max-background", c.PrincipalMaxBackground != 0},
			{"principal-exec-memory", c.PrincipalExecMemory != ""},
			{"principal-exec-pids", c.PrincipalExecPids != 0},
		} {
			if f.set {
				return fieldErr(f.key, "needs --listen: it configures the HTTP front end, and without --listen serve speaks stdio")
			}
		}
		return nil
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil || port == "" {
		return fieldErr("listen", "%q is not host:port (such as 127.0.0.1:8080, or :8080 for every interface)", c.Listen)
	}
	if host != "" && !strings.EqualFold(host, "localhost") && net.ParseIP(host) == nil {
		return fieldErr("listen", "%q: give an address or localhost, not a name (a name may resolve off loopback)", c.Listen)
	}
	var err2 error
	for _, p := range []struct {
		key string
		v   *string
	}{{"token-file", &c.TokenFile}, {"principals", &c.Principals}, {"tls-cert", &c.TLSCert}, {"tls-key", &c.TLSKey}} {
		if *p.v == "" {
			continue
		}
		if *p.v, err2 = filepath.Abs(*p.v); err2 != nil {
			return fieldErr(p.key, "%v", err2)
		}
		if _, err := os.Stat(*p.v); err != nil {
			return fieldErr(p.key, "%q: %v", *p.v, unwrapPath(err))
		}
	}
	authed := c.TokenFile != "" || c.JWKSURL != ""
	switch {
	case c.TokenFile != "" && c.JWKSURL != "":
		return fieldErr("token-file", "conflicts with --jwks-url: choose one way to verify tokens")
	case !authed && !ListenLoopback(c.Listen):
		return fieldErr("listen", "%q is not loopback, and off loopback authentication is required: give --token-file or --jwks-url (or listen on 127.0.0.1)", c.Listen)
	case c.Principals != "" && !authed:
		return fieldErr("principals", "needs --token-file or --jwks-url: a principal is a token's subject")
	case c.Principals != "" && c.Workspace != "":
		return fieldErr("principals", "conflicts with --workspace: with principals each session's workspaces are its principal's")
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return fieldErr("tls-cert", "--tls-cert and --tls-key go together")
	case c.JWKSURL == "" && (c.JWTIssuer != "" || c.JWTAudience != ""):
		return fieldErr("jwt-issuer", "needs --jwks-url")
	}
	if c.JWKSURL != "" {
		if c.JWTIssuer == "" || c.JWTAudience == "" {
			return fieldErr("jwks-url", "needs --jwt-issuer and --jwt-audience: a token is checked against both")
		}
		if err := checkURL("jwks-url", c.JWKSURL, true); err != nil {
			return err
		}
	}
	for _, u := range c.AuthorizationServers {
		if err := checkURL("authorization-server", u, true); err != nil {
			return err
		}
	}
	if c.ResourceURL != "" {
		if err := checkURL("resource-url", c.ResourceURL, false); err != nil {
			return err
		}
	}
	for i, o := range c.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return fieldErr("allowed-origin", "%q is not an origin: want scheme://host[:port], such as https://app.example.com", o)
		}
		c.AllowedOrigins[i] = strings.ToLower(u.Scheme + "://" + u.Host)
	}
	for _, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/@ \t") {
			return fieldErr("allowed-host", "%q is not a host name or host:port", h)
		}
	}
	for _, f := range []struct {
		key string
		v   int64
	}{
		{"max-request-bytes", c.MaxRequestBytes},
		{"principal-max-calls", int64(c.PrincipalMaxCalls)},
		{"session-idle", int64(c.SessionIdle)},
		{"shutdown-timeout", int64(c.ShutdownTimeout)},
		{"principal-max-sessions", int64(c.PrincipalMaxSessions)},
		{"principal-max-commands", int64(c.PrincipalMaxCommands)},
		{"principal-max-background", int64(c.PrincipalMaxBackground)},
	} {
		if f.v < 0 {
			return fieldErr(f.key, "must not be negative")
		}
	}
	if _, err := ParseSize(c.PrincipalExecMemory); err != nil {
		return fieldErr("principal-exec-memory", "%v", err)
	}
	if c.PrincipalExecPids < -1 {
		return fieldErr("principal-exec-pids", "must be a positive number of processes, 0 for the default (4096) or -1 for none")
	}
	return nil
}

// checkURL checks that u is an absolute http(s) URL; https unless its
// host is loopback, when secure.
func checkURL(key, u string, secure bool) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fieldErr(key, "%q is not an http(s) URL", u)
	}
	if secure && p.Scheme == "http" {
		host := p.Hostname()
		ip := net.ParseIP(host)
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			return fieldErr(key, "%q: use https (plain http is accepted only on loopback)", u)
		}
	}
	return nil
}

// unwrapPath drops the *PathError's repetition of the path.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok { //nolint:errorlint // the direct error of os.Stat
		return pe.Err
	}
	return err
}

// PrincipalCaps returns a principal's caps in all over HTTP, defaults
// applied: sessions, commands at once, background commands, memory in
// bytes and processes (0: none).
func (c *Config) PrincipalCaps() (sessions, commands, background int, memory, pids int64) {
	sessions = cmp.Or(c.PrincipalMaxSessions, DefaultPrincipalMaxSessions)
	commands = cmp.Or(c.PrincipalMaxCommands, max(1, toolexec.DefaultMaxConcurrent/2))
	background = cmp.Or(c.PrincipalMaxBackground, DefaultPrincipalMaxBackground)
	memory, _ = ParseSize(c.PrincipalExecMemory) // validated
	switch memory {
	case 0:
		memory = DefaultPrincipalExecMemory
	case -1:
		memory = 0
	}
	switch c.PrincipalExecPids {
	case 0:
		pids = DefaultPrincipalExecPids
	case -1:
	default:
		pids = int64(c.PrincipalExecPids)
	}
	return sessions, commands, background, memory, pids
}

// Metrics reports whether serve keeps metrics: with --metrics-listen,
// --listen or an OTLP export (issue 39).
func (c *Config) Metrics() bool { return c.MetricsListen != "" || c.Listen != "" || c.OTLP() }

// OTLP reports whether serve exports over OTLP: --otlp-endpoint, or the
// environment's receiver (OTLPFromEnv).
func (c *Config) OTLP() bool { return c.OTLPEndpoint != "" || c.OTLPFromEnv }
