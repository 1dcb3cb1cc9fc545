// Package config is the harness binary's configuration: one struct filled
// from defaults, an optional YAML file, HARNESS_* environment variables and
// flags, in that order of increasing precedence, and validated before
// anything is served. Every error names the flag and, where there is a fixed
// set, the allowed values; the loader names where a bad value came from (the
// flag, the HARNESS_* variable, or the YAML file and key).
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/journal"
	"github.com/dsh-go/harness/services/sandbox"
)

// Backends are the values of --fs.
var Backends = []string{"sandbox", "local"}

// LandlockSettings are the values of --landlock.
var LandlockSettings = []string{"auto", "off"}

// ExecBackends are the values of --exec.
var ExecBackends = []string{"sandbox", "local", "off"}

// ExecIsolations are the values of --exec-isolation.
var ExecIsolations = []string{"bwrap", "landlock"}

// Permissions are the values of --network and --unix-sockets.
var Permissions = []string{"deny", "allow"}

// LogLevels are the values of --log-level. trace adds the dependency
// wiring's own account (fx events) to debug.
var LogLevels = []string{"trace", "debug", "info", "warn", "error"}

// Durabilities returns the values of --durability.
func Durabilities() []string {
	out := make([]string, 0, len(fslocal.Durabilities))
	for _, d := range fslocal.Durabilities {
		out = append(out, string(d))
	}
	return out
}

// LogFormats are the values of --log-format.
var LogFormats = []string{"json", "console"}

// Config is the whole configuration of one harness process. YAML keys are
// the flag names.
type Config struct {
	// FS is the backend: "sandbox" (fssandbox, the default) or "local"
	// (fslocal, never confines: it implies danger-full-access).
	FS string `yaml:"fs"`
	// Mode is the deployment default sandbox mode. Under FS "local" it must
	// be danger-full-access (the loader sets it when no mode was given).
	Mode string `yaml:"mode"`
	// Workspace, when set, is every session's working directory and only
	// workspace root; else a session's roots are the client's file:// roots,
	// else the process working directory (never "/").
	Workspace string `yaml:"workspace"`
	// RootsTimeout bounds the wait for a client's roots (roots/list); 0
	// means 30 s.
	RootsTimeout time.Duration `yaml:"roots-timeout"`
	// TempRoots are the temp areas writable under workspace-write; empty
	// means the platform temp areas.
	TempRoots []string `yaml:"temp-root"`
	// SharedTemp makes the temp roots themselves writable to every
	// session, shared with every other process there. Without it (the
	// default) each MCP session and each harness call gets a temp area of
	// its own, a new directory in the first temp root, as its only temp
	// root (issue 34).
	SharedTemp bool `yaml:"shared-temp"`
	// Landlock is "auto" (confine each workspace-write mutation under a
	// Landlock domain where the kernel allows it) or "off" (always the
	// fallback: publication by exchange, checked and undone); "" is
	// "auto".
	Landlock string `yaml:"landlock"`
	// Protect are gitignore-style patterns, relative to each workspace
	// root, of protected paths under workspace-write besides
	// version-control metadata.
	Protect []string `yaml:"protect"`
	// Unprotect are names of default host-run files (sandbox.HostRunFiles:
	// .vscode, .mcp.json, ...) left writable under workspace-write.
	Unprotect []string `yaml:"unprotect"`
	// VCS is how version-control metadata is protected under
	// workspace-write: "commit" (the default: history can be recorded,
	// what makes git run code stays read-only) or "read-only" (wholly).
	VCS string `yaml:"vcs"`
	// DenyRead are gitignore-style patterns neither the file tools nor
	// commands read, in every mode, added to the defaults
	// (sandbox.DenyReadDefaults): `~/x` or `/abs/x` anchored, a slash-free
	// pattern or a `**/` one at any depth, `!pattern` an exemption.
	DenyRead []string `yaml:"deny-read"`
	// AllowRead are default deny-read patterns dropped, each spelled as
	// the default is (`~/.aws`, `.env`).
	AllowRead []string `yaml:"allow-read"`
	// ConfigFile is the absolute path of the YAML file the configuration
	// was read from ("" for none): read-only under workspace-write.
	ConfigFile string `yaml:"-"`
	// WritableRoots are extra roots writable under workspace-write, for
	// the file fence and the command runner alike.
	WritableRoots []string `yaml:"writable-root"`
	// ToolchainCaches adds the existing package and build caches of Go,
	// npm, pip, uv, cargo, Maven and Gradle, as the commands' environment
	// names them (toolchaincache.Existing), to the writable roots.
	ToolchainCaches bool `yaml:"toolchain-caches"`

	// Exec is the command runner: "sandbox" (execsandbox, the default),
	// "local" (execlocal, never confines) or "off" (no exec tool).
	Exec string `yaml:"exec"`
	// Network and UnixSockets are "deny" (the default) or "allow": whether
	// confined commands may open network sockets and Unix sockets.
	Network     string `yaml:"network"`
	UnixSockets string `yaml:"unix-sockets"`
	// UnixSocketPaths are named Unix sockets (--unix-socket; absolute and
	// clean after Validate) commands may connect to while every other
	// Unix socket stays unreachable; under --exec sandbox each must be a
	// socket when the configuration is validated.
	UnixSocketPaths []string `yaml:"unix-socket"`
	// GPGAgent lets confined commands sign with the user's gpg-agent
	// through its restricted socket, the public keyring readable and the
	// private keys not (--gpg-agent; execsandbox.Config.GPGAgent). Needs
	// --exec sandbox with --exec-isolation bwrap.
	GPGAgent bool `yaml:"gpg-agent"`
	// AllowDomains are the host names (exact, or "*." and a suffix)
	// confined commands reach through the domain proxy under network deny
	// (--allow-domain); checked when the runner starts (netproxy.New).
	// With network allow they are a contradiction, refused.
	AllowDomains []string `yaml:"allow-domain"`
	// ExecEnv names server variables passed through to commands besides
	// PATH, HOME, USER, LANG, TERM and TMPDIR.
	ExecEnv []string `yaml:"exec-env"`
	// ExecIsolation is how confined commands are isolated: "bwrap" (a
	// bubblewrap world with Landlock and seccomp beneath, the default) or
	// "landlock" (Landlock and seccomp only, for hosts without bubblewrap).
	ExecIsolation string `yaml:"exec-isolation"`
	// ExecMemory caps a command's memory: a size such as 512MiB, 2GiB or
	// 4G (binary units), "none", or "" for the default (2GiB).
	ExecMemory string `yaml:"exec-memory"`
	// ExecPids caps a command's processes; 0 means the default (512), -1
	// none.
	ExecPids int `yaml:"exec-pids"`
	// JournalCommands snapshots each command's writable workspace roots
	// before it runs and journals what it changed (services/cmdjournal), so
	// `harness undo` can restore it; it needs the journal
	// (--journal-max-bytes above 0) and a command runner.
	JournalCommands bool `yaml:"journal-commands"`

	ReadLimit         int   `yaml:"read-limit"`
	ReadMaxLineLength int   `yaml:"read-max-line-length"`
	ReadMaxBytes      int   `yaml:"read-max-bytes"`
	ReadStreamMinSize int64 `yaml:"read-stream-min-size"`
	ListLimit         int   `yaml:"list-limit"`
	WriteMaxBytes     int   `yaml:"write-max-bytes"`
	// ResultTextMaxBytes is the largest before or after text a write or
	// edit result carries in its structured value; 0 means 512.
	ResultTextMaxBytes int `yaml:"result-text-max-bytes"`

	// MaxConcurrentCalls caps the tool calls serve runs at once; 0 means
	// four times GOMAXPROCS, at least 8 (see mcpserver.Options).
	MaxConcurrentCalls int `yaml:"max-concurrent-calls"`
	// MaxWaitingCalls bounds the calls waiting for a call slot at once (an
	// HTTP principal's at half of it); 0 means 64 per slot (see
	// mcpserver.Options).
	MaxWaitingCalls int `yaml:"max-waiting-calls"`
	// CallWait bounds how long a call waits for a slot before SERVER_BUSY;
	// 0 means 30s.
	CallWait time.Duration `yaml:"call-wait"`
	// ExecIdleTimeout ends an interactive command (exec with interactive
	// or tty) that has had no input for this long; 0 means 30m.
	ExecIdleTimeout time.Duration `yaml:"exec-idle-timeout"`

	// Invariants turns on the runtime contract checks.
	Invariants bool `yaml:"invariants"`

	// Durability is what a write waits for: "full" (file and directory
	// fsynced, the default; also "") or "atomic" (atomic publication, no
	// fsync).
	Durability string `yaml:"durability"`
	// WorkspaceOwner gives new files and directories the workspace root's
	// owner, and makes the file tools act as that owner, when the process
	// runs as root and the root belongs to another user (on by default).
	WorkspaceOwner bool `yaml:"workspace-owner"`
	// JournalMaxBytes is the cap in bytes of the journal that keeps the
	// prior state of every change a file tool makes (issue 25), in
	// harness's state directory; 0 turns the journal off (a Config literal
	// has it off; Default sets journal.DefaultMaxBytes).
	JournalMaxBytes int64 `yaml:"journal-max-bytes"`

	// OneShot composes for a single call with no session history (harness
	// call): the read-before-write policy is left out, because there is no
	// earlier read in the same session to rely on. Not a flag.
	OneShot bool `yaml:"-"`

	LogLevel  string `yaml:"log-level"`
	LogFormat string `yaml:"log-format"`

	// AuditLog is the audit log file every call's record is appended to
	// (--audit-log; made absolute), or "off" for none. The loader sets
	// DefaultAuditLog where the state directory is known; "" (no state
	// directory, or a Config built in code) is none too.
	AuditLog string `yaml:"audit-log"`
	// AuditLogDefault says AuditLog is the loader's DefaultAuditLog, not a
	// file the user named: a best-effort default the server runs without
	// when it cannot be opened (a missing or read-only home), where a named
	// file that cannot be opened stops the start.
	AuditLogDefault bool `yaml:"-"`
	// AuditMaxBytes is the size in bytes past which the audit log rotates;
	// 0 means audit.DefaultMaxBytes (64 MiB).
	AuditMaxBytes int64 `yaml:"audit-max-bytes"`

	// HTTP configures `harness serve --listen` (issue 26).
	HTTP `yaml:",inline"`
}

// AuditLogOff is the --audit-log value that turns the audit log off.
const AuditLogOff = "off"

// AuditLogPath returns the audit log file of c, "" when there is none
// (off, or no state directory to put it in).
func (c Config) AuditLogPath() string {
	if c.AuditLog == AuditLogOff {
		return ""
	}
	return c.AuditLog
}

// Default returns the configuration with nothing set.
func Default() Config {
	return Config{
		FS:              "sandbox",
		Mode:            string(sandbox.ReadOnly),
		Landlock:        "auto",
		VCS:             string(sandbox.VCSCommit),
		Exec:            "sandbox",
		ExecIsolation:   "bwrap",
		Network:         "deny",
		UnixSockets:     "deny",
		Durability:      string(fslocal.DurabilityFull),
		WorkspaceOwner:  true,
		JournalMaxBytes: journal.DefaultMaxBytes,
		LogLevel:        "info",
		LogFormat:       "console",
	}
}

// FieldError is a bad configuration value: Key is the flag name without
// dashes ("mode"), Msg what is wrong with it. Its text names the flag; the
// loader replaces the flag with the value's source.
type FieldError struct {
	Key string
	Msg string
}

func (e *FieldError) Error() string { return "--" + e.Key + ": " + e.Msg }

func fieldErr(key, format string, args ...any) error {
	return &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks every field and makes paths absolute; errors are
// *FieldError.
func (c *Config) Validate() error {
	if err := oneOf("fs", c.FS, Backends); err != nil {
		return err
	}
	if c.Landlock == "" {
		c.Landlock = "auto"
	}
	if err := oneOf("landlock", c.Landlock, LandlockSettings); err != nil {
		return err
	}
	modes := make([]string, 0, 3)
	for _, m := range sandbox.Modes() {
		modes = append(modes, string(m))
	}
	if err := oneOf("mode", c.Mode, modes); err != nil {
		return err
	}
	if c.FS == "local" && c.Mode != string(sandbox.DangerFullAccess) {
		return &FieldError{Key: "mode", Msg: fmt.Sprintf("%q conflicts with --fs local: the local backend never confines, so it always runs as %s; drop the mode or use --fs sandbox", c.Mode, sandbox.DangerFullAccess)}
	}
	if c.RootsTimeout < 0 {
		return fieldErr("roots-timeout", "must not be negative, got %s", c.RootsTimeout)
	}
	if c.Workspace != "" {
		abs, err := filepath.Abs(c.Workspace)
		if err != nil {
			return fieldErr("workspace", "%q: %v", c.Workspace, err)
		}
		c.Workspace = abs
	}
	vcs := make([]string, 0, 2)
	for _, v := range sandbox.VCSValues() {
		vcs = append(vcs, string(v))
	}
	if c.VCS == "" {
		c.VCS = string(sandbox.VCSCommit)
	}
	if err := oneOf("vcs", c.VCS, vcs); err != nil {
		return err
	}
	if _, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{Unprotect: c.Unprotect}); err != nil {
		return fieldErr("unprotect", "%v", err)
	}
	if _, err := sandbox.NewProtectedPaths(sandbox.ProtectOptions{Patterns: c.Protect}); err != nil {
		return fieldErr("protect", "%v", err)
	}
	if err := validateDenyRead(c.DenyRead, c.AllowRead); err != nil {
		return err
	}
	var err error
	if c.TempRoots, err = absPaths("temp-root", c.TempRoots); err != nil {
		return err
	}
	if c.WritableRoots, err = absPaths("writable-root", c.WritableRoots); err != nil {
		return err
	}
	if err := c.validateExec(); err != nil {
		return err
	}
	for _, f := range []struct {
		flag string
		v    int64
	}{
		{"read-limit", int64(c.ReadLimit)},
		{"read-max-line-length", int64(c.ReadMaxLineLength)},
		{"read-max-bytes", int64(c.ReadMaxBytes)},
		{"read-stream-min-size", c.ReadStreamMinSize},
		{"list-limit", int64(c.ListLimit)},
		{"write-max-bytes", int64(c.WriteMaxBytes)},
		{"result-text-max-bytes", int64(c.ResultTextMaxBytes)},
		{"max-concurrent-calls", int64(c.MaxConcurrentCalls)},
		{"max-waiting-calls", int64(c.MaxWaitingCalls)},
		{"call-wait", int64(c.CallWait)},
		{"exec-idle-timeout", int64(c.ExecIdleTimeout)},
		{"journal-max-bytes", c.JournalMaxBytes},
		{"audit-max-bytes", c.AuditMaxBytes},
	} {
		if f.v < 0 {
			return fieldErr(f.flag, "must be a positive integer (0 means the default), got %d", f.v)
		}
	}
	if c.Durability == "" {
		c.Durability = string(fslocal.DurabilityFull)
	}
	if err := oneOf("durability", c.Durability, Durabilities()); err != nil {
		return err
	}
	if c.AuditLog != "" && c.AuditLog != AuditLogOff {
		abs, err := filepath.Abs(c.AuditLog)
		if err != nil {
			return fieldErr("audit-log", "%q: %v", c.AuditLog, err)
		}
		c.AuditLog = abs
	}
	if err := c.validateHTTP(); err != nil {
		return err
	}
	if err := oneOf("log-level", c.LogLevel, LogLevels); err != nil {
		return err
	}
	return oneOf("log-format", c.LogFormat, LogFormats)
}

// validateExec checks the command runner's fields. They are newer than
// many Config literals: empty means the default, which confines.
func (c *Config) validateExec() error {
	def := Default()
	for _, f := range []struct {
		key  string
		v    *string
		d    string
		vals []string
	}{
		{"exec", &c.Exec, def.Exec, ExecBackends},
		{"network", &c.Network, def.Network, Permissions},
		{"unix-sockets", &c.UnixSockets, def.UnixSockets, Permissions},
		{"exec-isolation", &c.ExecIsolation, def.ExecIsolation, ExecIsolations},
	} {
		if *f.v == "" {
			*f.v = f.d
		}
		if err := oneOf(f.key, *f.v, f.vals); err != nil {
			return err
		}
	}
	switch {
	case len(c.AllowDomains) == 0:
	case c.Network == "allow":
		return fieldErr("allow-domain", "%q conflicts with --network allow: allowed names filter a network that is otherwise refused; drop --network allow (the default deny keeps everything else out) or drop --allow-domain", c.AllowDomains)
	case c.Exec != "sandbox":
		return fieldErr("allow-domain", "%q needs --exec sandbox: the proxy is reached from the confined commands' network namespace, and --exec %s confines nothing", c.AllowDomains, c.Exec)
	case c.ExecIsolation != "bwrap":
		return fieldErr("allow-domain", "%q needs --exec-isolation bwrap: the proxy listens inside each command's network namespace, which --exec-isolation %s does not make", c.AllowDomains, c.ExecIsolation)
	}
	switch {
	case !c.GPGAgent:
	case c.Exec != "sandbox":
		return fieldErr("gpg-agent", "is for confined commands (--exec sandbox); --exec %s commands reach the agent as the user does", c.Exec)
	case c.ExecIsolation != "bwrap":
		return fieldErr("gpg-agent", "needs --exec-isolation bwrap: the agent's restricted socket is bound into each command's view, which --exec-isolation %s does not make", c.ExecIsolation)
	}
	switch {
	case !c.JournalCommands:
	case c.JournalMaxBytes == 0:
		return fieldErr("journal-commands", "needs the journal, which --journal-max-bytes 0 turns off")
	case c.Exec == "off":
		return fieldErr("journal-commands", "needs a command runner, and --exec off has none")
	}
	for _, n := range c.ExecEnv {
		if n == "" || strings.ContainsAny(n, "= \x00") {
			return fieldErr("exec-env", "%q is not a variable name", n)
		}
	}
	var err error
	if c.UnixSocketPaths, err = absPaths("unix-socket", c.UnixSocketPaths); err != nil {
		return err
	}
	if c.Exec == "sandbox" {
		for _, p := range c.UnixSocketPaths {
			if err := execsandbox.CheckUnixSocket(p); err != nil {
				return fieldErr("unix-socket", "%v", err)
			}
		}
	}
	if _, err := ParseSize(c.ExecMemory); err != nil {
		return fieldErr("exec-memory", "%v", err)
	}
	if c.ExecPids < -1 {
		return fieldErr("exec-pids", "must be a positive number of processes, 0 for the default (512) or -1 for none")
	}
	return nil
}

// ParseSize returns the bytes a --exec-memory value names: "" is 0 (the
// default), "none" is -1, else a positive integer with an optional unit K,
// M, G or T (KiB, MiB, GiB, TiB; binary units either way) or B. Errors say
// what is wanted.
func ParseSize(s string) (int64, error) {
	switch strings.TrimSpace(s) {
	case "":
		return 0, nil
	case "none":
		return -1, nil
	}
	v := strings.TrimSpace(s)
	num := strings.TrimRight(v, "KMGTiBkmgtb")
	unit := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(v[len(num):], "B"), "b"))
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "I"), "i")
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	if err != nil || n <= 0 || !ok || n > (1<<62)>>sh {
		return 0, fmt.Errorf("%q is not a size: want a positive number with K, M, G or T (binary units), such as 2G or 512MiB, or none", s)
	}
	return n << sh, nil
}

// absPaths returns paths made absolute (a new slice: never written through
// the caller's), or an error naming key for an empty one.
func absPaths(key string, paths []string) ([]string, error) {
	out := slices.Clone(paths)
	for i, r := range out {
		if strings.TrimSpace(r) == "" {
			return nil, fieldErr(key, "must not be empty")
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fieldErr(key, "%q: %v", r, err)
		}
		out[i] = abs
	}
	return out, nil
}

func oneOf(key, v string, allowed []string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	msg := fmt.Sprintf("unknown value %q: allowed values are %s", v, strings.Join(allowed, ", "))
	if s := Suggest(v, allowed); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return &FieldError{Key: key, Msg: msg}
}

// Suggest returns the candidate closest to word by edit distance when it is
// close enough to be a likely typo (at most 2 edits, or a third of the
// word), else "".
func Suggest(word string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := levenshtein.ComputeDistance(word, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(2, len(word)/3) || bestD >= len(word) {
		return ""
	}
	return best
}

// SessionTempParent is the directory in which each session gets a temp
// area of its own: the first temp root (else os.TempDir()) that lies
// outside the workspace, so nothing is made in the user's tree; "" under
// SharedTemp, under the local backend (which confines nothing), or when
// every temp root lies inside the workspace (then the user's own: the
// sessions use the temp roots themselves).
func (c Config) SessionTempParent() string {
	if c.SharedTemp || c.FS == "local" {
		return ""
	}
	temps := c.TempRoots
	if len(temps) == 0 {
		temps = []string{os.TempDir()}
	}
	for _, t := range temps {
		if c.Workspace == "" || !dirfd.Beneath(filepath.Clean(c.Workspace), filepath.Clean(t)) {
			return t
		}
	}
	return ""
}
