package execsandbox

import (
	"context"
	"net/netip"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/gpgagent"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// Isolations (Config.Isolation).
const (
	// IsolationBwrap builds each command's world with bubblewrap, with
	// Landlock and seccomp beneath (the default).
	IsolationBwrap = "bwrap"
	// IsolationLandlock runs commands under Landlock and seccomp only,
	// for hosts without bubblewrap; see README.md for what it does not
	// cover.
	IsolationLandlock = "landlock"
)

// Default per-command limits (Config.Memory, Config.Pids).
const (
	// DefaultMemory is the default memory cap of a command, in bytes: the
	// whole tree's under a cgroup, each process's data under rlimits.
	DefaultMemory = 2 << 30
	// DefaultPids is the default cap on a command's processes.
	DefaultPids = 512
)

// Config is what the confinement permits beyond the writable roots.
type Config struct {
	// Network permits new non-Unix sockets (TCP, UDP, ...) in read-only
	// and workspace-write (--network allow); without it a command has a
	// network namespace with loopback only: its session's, shared by the
	// session's commands (a call with no session: one of its own).
	Network bool `yaml:"network" json:"network"`
	// UnixSockets permits new Unix sockets, and so connecting to any
	// pathname Unix socket the process can reach (--unix-sockets allow).
	UnixSockets bool `yaml:"unixSockets" json:"unixSockets"`
	// UnixSocketPaths are named Unix sockets (--unix-socket: absolute,
	// clean paths of sockets that exist when New runs) that commands may
	// connect to while every other pathname socket stays unreachable:
	// kernel-enforced where Landlock has ABI 9; below it the bubblewrap
	// isolation masks in each command's view every other socket bound
	// when the command starts, and the Landlock isolation refuses
	// commands (see README.md). Each is resolved again for every command.
	UnixSocketPaths []string `yaml:"unixSocketPaths" json:"unixSocketPaths"`
	// GPGAgent, when set (--gpg-agent), lets commands sign with the
	// user's gpg-agent: its restricted socket (signing and decrypting with
	// the keys it holds; no secret key export) is bound at the agent's
	// usual socket path, kept to as a named socket is, and the public
	// files of its home (gpgagent.PublicFiles) become readable through the
	// deny-read set, every other entry of the home (the private keys) staying
	// masked. Requires IsolationBwrap.
	GPGAgent *gpgagent.Agent `yaml:"-" json:"-"`
	// Isolation is IsolationBwrap ("" means it) or IsolationLandlock
	// (--exec-isolation).
	Isolation string `yaml:"isolation" json:"isolation"`
	// Memory caps a command's memory in bytes (--exec-memory); 0 means
	// DefaultMemory, -1 no cap.
	Memory int64 `yaml:"memory" json:"memory"`
	// Pids caps a command's processes (--exec-pids); 0 means DefaultPids,
	// -1 no cap.
	Pids int64 `yaml:"pids" json:"pids"`
	// AllowDomains are the names commands reach through the domain proxy
	// (services/netproxy) under network deny (--allow-domain): each
	// confined command's namespace holds the proxy's listener on
	// 127.0.0.1 and its environment names it (HTTP_PROXY, HTTPS_PROXY,
	// ALL_PROXY, NO_PROXY and their lower-case forms). Requires
	// IsolationBwrap and not Network. Under IsolationBwrap without Network
	// the proxy is there with no names too: it refuses every host but
	// those the user allows (newProxy).
	AllowDomains []string `yaml:"allowDomains" json:"allowDomains"`
	// Resolver resolves names for the proxy; nil is the system's (a test
	// maps its own name to 127.0.0.1).
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	} `yaml:"-" json:"-"`
	// Log gets the proxy's decisions (each allowed and refused
	// connection, at info); nil discards them. Module sets it to the
	// app's logger.
	Log *zap.Logger `yaml:"-" json:"-"`
	// ProxyDecided is told the outcome of each of the proxy's decisions
	// (netproxy.Config.Decided); nil: nobody.
	ProxyDecided func(outcome string) `yaml:"-" json:"-"`
	// OneCall says the runner serves a single call (harness call): the
	// next session's network namespace is not made ahead, and the
	// warm-up does not walk root's secrets ahead (issue 34's first
	// command is a server's; a single call would wait for them at its
	// end instead).
	OneCall bool `yaml:"-" json:"-"`
}

// Params are the fx inputs of Module.
type Params struct {
	fx.In

	Config    Config      `optional:"true"`
	Run       exec.Config `optional:"true"`
	Policy    *sandboxpolicy.Service
	Log       *zap.Logger `optional:"true"`
	Lifecycle fx.Lifecycle
}
