package config

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/telemetry"
)

// EnvPrefix prefixes every environment variable: HARNESS_MODE for --mode,
// HARNESS_TEMP_ROOT for --temp-root (a list separated by the OS path list
// separator), and so on.
const EnvPrefix = "HARNESS_"

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// Group names flags only some commands take.
type Group string

// HTTPFlags are the flags of serve's HTTP front end (--listen and the rest
// of HTTP); their YAML keys and variables are read by every command.
const HTTPFlags Group = "http"

// Flags registers the configuration flags on fs, including --config and
// the groups' flags, and
// returns the function that, after fs.Parse, loads the whole configuration:
// defaults, then the YAML file (--config or HARNESS_CONFIG), then HARNESS_*
// variables from getenv, then the flags that were set. The result is
// validated.
func Flags(fs *flag.FlagSet, getenv func(string) string, groups ...Group) func() (Config, error) {
	def := Default()
	var (
		file       = fs.String("config", "", "a YAML `FILE` whose keys are the flag names")
		backend    = fs.String("fs", def.FS, "filesystem `backend`: sandbox or local (never confines)")
		mode       = fs.String("mode", def.Mode, "default sandbox `mode`: read-only, workspace-write or danger-full-access")
		workspace  = fs.String("workspace", "", "the workspace root `DIR` and every session's working directory (default: the client's file:// roots, else the working directory; never /)")
		rootsWait  = fs.Duration("roots-timeout", 0, "how long a session waits for the client's roots (`duration`) before falling back to the working directory (0: 30s)")
		temps      stringList
		protect    stringList
		unprotect  stringList
		denyRead   stringList
		allowRead  stringList
		vcs        = fs.String("vcs", def.VCS, "how version-control metadata is protected under workspace-write (`setting`): commit (git can record history; hooks, config, attributes and pointer files stay read-only) or read-only (wholly)")
		landlock   = fs.String("landlock", def.Landlock, "Landlock `setting`: auto (confine writes under Landlock where the kernel allows) or off (check each publication after the fact and undo it)")
		writables  stringList
		execEnv    stringList
		unixPaths  stringList
		domains    stringList
		caches     = fs.Bool("toolchain-caches", false, "make the existing caches of Go, npm, pip, uv, cargo (registry and git), Maven and Gradle writable under workspace-write, found in the commands' environment (harness policy lists them)")
		execBack   = fs.String("exec", def.Exec, "command `runner`: sandbox (confined by the mode), local (never confines) or off (no exec tool)")
		network    = fs.String("network", def.Network, "network `access` of confined commands: deny or allow")
		unixSocks  = fs.String("unix-sockets", def.UnixSockets, "Unix-socket `access` of confined commands: deny or allow")
		isolation  = fs.String("exec-isolation", def.ExecIsolation, "how confined commands are isolated (`kind`): bwrap (a bubblewrap world, Landlock and seccomp beneath) or landlock (Landlock and seccomp only, for hosts without bubblewrap)")
		execMem    = fs.String("exec-memory", "", "a confined command's memory cap (`size`, such as 512M or 4G; none: no cap; default 2G)")
		execPids   = fs.Int("exec-pids", 0, "a confined command's process cap (`count`; -1: no cap; 0: 512)")
		execIdle   = fs.Duration("exec-idle-timeout", 0, "how long an interactive command (exec with interactive or tty) may go without input before it is ended (`duration`; 0: 30m)")
		readLimit  = fs.Int("read-limit", 0, "`lines` one read returns at most (0: 2000)")
		lineLen    = fs.Int("read-max-line-length", 0, "code `points` kept of a line (0: 2000)")
		readBytes  = fs.Int("read-max-bytes", 0, "`bytes` one read, or one grep in content mode, returns at most (0: 51200)")
		streamMin  = fs.Int64("read-stream-min-size", 0, "file size in `bytes` from which reads stream (0: 10 MiB)")
		listLimit  = fs.Int("list-limit", 0, "`entries` one list returns at most (0: 1000)")
		writeMax   = fs.Int("write-max-bytes", 0, "`bytes` of one write's content or one edit's new_string at most (0: 16 MiB)")
		resultMax  = fs.Int("result-text-max-bytes", 0, "`bytes` of the before and after texts a write or edit result carries at most; larger ones are left out, the diff stays (0: 512)")
		maxCalls   = fs.Int("max-concurrent-calls", 0, "tool `calls` served at once; more wait for a slot, round-robin between principals and sessions (0: 4x GOMAXPROCS, at least 8)")
		maxWaiting = fs.Int("max-waiting-calls", 0, "tool `calls` waiting for a slot at once, an HTTP principal's at most half of them; beyond it SERVER_BUSY (0: 64 per slot)")
		callWait   = fs.Duration("call-wait", 0, "how long a call waits for a slot (`duration`) before SERVER_BUSY with a retry-after hint (0: 30s)")
		inv        = fs.Bool("invariants", false, "check runtime invariants")
		durable    = fs.String("durability", def.Durability, "durability `level`: full (a write waits for the file and directory fsyncs) or atomic (no fsync: survives a crash of the process, not of the machine)")
		journalMax = fs.Int64("journal-max-bytes", def.JournalMaxBytes, "cap in `bytes` of the journal that keeps the prior state of every change a file tool makes, in harness's state directory ($XDG_STATE_HOME/harness/journal); the oldest go first, except a session's own, whose next change is refused instead (FS_JOURNAL_FULL); 0 turns the journal off")
		wsOwner    = fs.Bool("workspace-owner", def.WorkspaceOwner, "running as root, when the workspace root is another user's, act as that user in the file tools and give it new files and directories")
		logLevel   = fs.String("log-level", def.LogLevel, "log `level`: trace (debug plus the dependency wiring), debug, info, warn or error")
		logFormat  = fs.String("log-format", def.LogFormat, "log `format` on stderr: json or console")
		auditLog   = fs.String("audit-log", "", "the audit log `FILE`: one JSON line per call, appended (default: audit.jsonl in the state directory, $XDG_STATE_HOME/harness or ~/.local/state/harness; off: none; never inside a writable root or the workspace unless the deny-read set hides it)")
		auditMax   = fs.Int64("audit-max-bytes", 0, "the audit log's size in `bytes` past which it rotates, keeping 3 rotated files (0: 64 MiB)")
	)
	fs.Var(&protect, "protect", "a gitignore-style `PATTERN`, relative to the workspace root, of paths read-only under workspace-write besides .git, .hg, .jj, .svn and the host-run files (repeatable)")
	fs.Var(&unprotect, "unprotect", "the `NAME` of a default protected host-run file left writable under workspace-write, e.g. .vscode (repeatable; `harness policy` lists them)")
	fs.Var(&denyRead, "deny-read", "a gitignore-style `PATTERN` neither the file tools nor commands read, in every mode, besides the defaults: ~/path (the server user's home), /abs/path, or a slash-free name such as *.pem at any depth (repeatable; `harness policy` lists the set)")
	fs.Var(&allowRead, "allow-read", "a default deny-read `PATTERN` to drop, spelled as `harness policy` lists it, e.g. ~/.npmrc or .env (repeatable)")
	fs.Var(&temps, "temp-root", "a temp area `DIR` writable under workspace-write (repeatable; default: /tmp and $TMPDIR)")
	fs.Var(&writables, "writable-root", "an extra `DIR` writable under workspace-write by files and commands alike, e.g. a build cache (repeatable)")
	fs.Var(&unixPaths, "unix-socket", "a Unix socket `PATH` confined commands may connect to while every other stays unreachable under --unix-sockets deny, e.g. \"$SSH_AUTH_SOCK\" (repeatable; must exist at start)")
	fs.Var(&domains, "allow-domain", "a host `NAME` confined commands reach through harness's filtering proxy under --network deny, exact or *.example.com for its subdomains, NAME:PORT for one port (repeatable; HTTP_PROXY, HTTPS_PROXY and ALL_PROXY are set for them, and an exact name resolves in commands for programs that ignore them)")
	fs.Var(&execEnv, "exec-env", "a server environment variable `NAME` passed to commands besides PATH, HOME, USER, LANG, TERM, TMPDIR (repeatable)")
	httpApply := map[string]func(*Config){}
	if slices.Contains(groups, HTTPFlags) {
		httpApply = httpFlags(fs)
	}
	sharedTemp := fs.Bool("shared-temp", false, "under workspace-write, commands and file tools write the temp roots themselves, shared with every other process there, in place of a temp area of each session's own (a new 0700 directory in the first --temp-root, without one in $TMPDIR, else /tmp; its TMPDIR, removed when the session ends)")
	gpgAgent := fs.Bool("gpg-agent", false, "confined commands sign with your gpg-agent (git commit -S): its restricted socket, which signs but never exports a secret key, is bound at the agent's usual socket path, and the public keyring of the GnuPG home becomes readable while the private keys stay masked (starts the agent if it is not running)")
	journalCmds := fs.Bool("journal-commands", false, "snapshot each command's writable workspace roots before it runs (stat only; the content of files changed since the last snapshot goes to the journal; .git, deny-read and gitignored paths are skipped) and journal what it changed, so harness undo can restore it")
	return func() (Config, error) {
		cfg := def
		// source maps a key to where its value came from, for errors.
		source := map[string]string{}
		path := *file
		if path == "" {
			path = getenv(EnvPrefix + "CONFIG")
		}
		if path != "" {
			if err := loadYAML(path, &cfg, source); err != nil {
				return cfg, err
			}
			if abs, err := filepath.Abs(path); err == nil {
				cfg.ConfigFile = abs
			}
		}
		if err := applyEnv(&cfg, getenv, source); err != nil {
			return cfg, err
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		apply := map[string]func(){
			"fs":                    func() { cfg.FS = *backend },
			"mode":                  func() { cfg.Mode = *mode },
			"workspace":             func() { cfg.Workspace = *workspace },
			"roots-timeout":         func() { cfg.RootsTimeout = *rootsWait },
			"temp-root":             func() { cfg.TempRoots = temps },
			"shared-temp":           func() { cfg.SharedTemp = *sharedTemp },
			"landlock":              func() { cfg.Landlock = *landlock },
			"protect":               func() { cfg.Protect = protect },
			"unprotect":             func() { cfg.Unprotect = unprotect },
			"deny-read":             func() { cfg.DenyRead = denyRead },
			"allow-read":            func() { cfg.AllowRead = allowRead },
			"vcs":                   func() { cfg.VCS = *vcs },
			"writable-root":         func() { cfg.WritableRoots = writables },
			"toolchain-caches":      func() { cfg.ToolchainCaches = *caches },
			"exec":                  func() { cfg.Exec = *execBack },
			"network":               func() { cfg.Network = *network },
			"unix-sockets":          func() { cfg.UnixSockets = *unixSocks },
			"unix-socket":           func() { cfg.UnixSocketPaths = unixPaths },
			"gpg-agent":             func() { cfg.GPGAgent = *gpgAgent },
			"allow-domain":          func() { cfg.AllowDomains = domains },
			"exec-env":              func() { cfg.ExecEnv = execEnv },
			"exec-isolation":        func() { cfg.ExecIsolation = *isolation },
			"exec-memory":           func() { cfg.ExecMemory = *execMem },
			"exec-pids":             func() { cfg.ExecPids = *execPids },
			"exec-idle-timeout":     func() { cfg.ExecIdleTimeout = *execIdle },
			"journal-commands":      func() { cfg.JournalCommands = *journalCmds },
			"read-limit":            func() { cfg.ReadLimit = *readLimit },
			"read-max-line-length":  func() { cfg.ReadMaxLineLength = *lineLen },
			"read-max-bytes":        func() { cfg.ReadMaxBytes = *readBytes },
			"read-stream-min-size":  func() { cfg.ReadStreamMinSize = *streamMin },
			"list-limit":            func() { cfg.ListLimit = *listLimit },
			"write-max-bytes":       func() { cfg.WriteMaxBytes = *writeMax },
			"result-text-max-bytes": func() { cfg.ResultTextMaxBytes = *resultMax },
			"max-concurrent-calls":  func() { cfg.MaxConcurrentCalls = *maxCalls },
			"max-waiting-calls":     func() { cfg.MaxWaitingCalls = *maxWaiting },
			"call-wait":             func() { cfg.CallWait = *callWait },
			"invariants":            func() { cfg.Invariants = *inv },
			"durability":            func() { cfg.Durability = *durable },
			"workspace-owner":       func() { cfg.WorkspaceOwner = *wsOwner },
			"journal-max-bytes":     func() { cfg.JournalMaxBytes = *journalMax },
			"log-level":             func() { cfg.LogLevel = *logLevel },
			"log-format":            func() { cfg.LogFormat = *logFormat },
			"audit-log":             func() { cfg.AuditLog = *auditLog },
			"audit-max-bytes":       func() { cfg.AuditMaxBytes = *auditMax },
		}
		for name, f := range httpApply {
			apply[name] = func() { f(&cfg) }
		}
		for name, f := range apply {
			if set[name] {
				f()
				source[name] = "--" + name
			}
		}
		cfg.OTLPFromEnv = telemetry.Enabled("", getenv)
		if cfg.OTLPEndpoint != "" && !telemetry.Enabled(cfg.OTLPEndpoint, getenv) {
			cfg.OTLPEndpoint = "" // OTEL_SDK_DISABLED=true
		}
		if cfg.AuditLog == "" {
			cfg.AuditLog = DefaultAuditLog(getenv)
			cfg.AuditLogDefault = cfg.AuditLog != ""
		}
		if cfg.FS == "local" && source["mode"] == "" {
			// The local backend never confines: say so in the mode.
			cfg.Mode = string(sandbox.DangerFullAccess)
		}
		err := cfg.Validate()
		if fe, ok := errors.AsType[*FieldError](err); ok && source[fe.Key] != "" {
			return cfg, fmt.Errorf("%s: %s", source[fe.Key], fe.Msg)
		}
		return cfg, err
	}
}

// yamlKeys returns the YAML keys of Config and, for each, the field's
// index path (the fields of an inlined struct such as HTTP included).
func yamlKeys() map[string][]int {
	keys := map[string][]int{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(slices.Clone(prefix), i)
			switch k := f.Tag.Get("yaml"); {
			case k == ",inline":
				walk(f.Type, idx)
			case k != "" && k != "-":
				keys[k] = idx
			}
		}
	}
	walk(reflect.TypeFor[Config](), nil)
	return keys
}

// loadYAML decodes the file at path into cfg strictly, key by key: an
// unknown key is an error naming it and the file, with the closest known
// key; a value of the wrong type names its key, the type wanted and the
// value given. Every error starts "--config FILE:LINE:"; source records
// `--config FILE:LINE: key "K"` for each key set.
func loadYAML(path string, cfg *Config, source map[string]string) error {
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return syntaxError(path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("--config %s:%d: want a mapping of flag names to values", path, root.Line)
	}
	keys := yamlKeys()
	known := slices.Sorted(maps.Keys(keys))
	v := reflect.ValueOf(cfg).Elem()
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, val := root.Content[i], root.Content[i+1]
		idx, ok := keys[k.Value]
		if !ok {
			msg := fmt.Sprintf("--config %s:%d: unknown key %q", path, k.Line, k.Value)
			if s := Suggest(k.Value, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return errors.New(msg + "; the keys are the flag names")
		}
		where := fmt.Sprintf("--config %s:%d: key %q", path, k.Line, k.Value)
		field := v.FieldByIndex(idx)
		if want := decodeValue(val, field); want != "" {
			return fmt.Errorf("--config %s:%d: key %q wants %s, got %s", path, val.Line, k.Value, want, given(val))
		}
		source[k.Value] = where
	}
	return nil
}

// yamlLine finds the line in a YAML error ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxError is the error of a file that is not YAML: its line and what
// is wrong, without the parser's prefix.
func syntaxError(path string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("--config %s:%s: not valid YAML: %s", path, m[1], msg[len(m[0]):])
	}
	return fmt.Errorf("--config %s: not valid YAML: %s", path, strings.TrimPrefix(msg, "yaml: "))
}

// decodeValue decodes val into field and returns "", or returns what field
// wants, in words ("a whole number"), when val does not fit it. A duration
// must be written with its unit: a bare number is refused, not taken as
// nanoseconds.
func decodeValue(val *yaml.Node, field reflect.Value) string {
	if field.Type() == reflect.TypeFor[time.Duration]() {
		d, err := time.ParseDuration(val.Value)
		if val.Kind != yaml.ScalarNode || val.Tag != "!!str" || err != nil {
			return wants(field.Type())
		}
		field.SetInt(int64(d))
		return ""
	}
	if val.Decode(field.Addr().Interface()) != nil {
		return wants(field.Type())
	}
	return ""
}

// wants describes the values of a field type.
func wants(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "a duration with its unit, such as 30s, 2m or 500ms"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return "a whole number"
	case t.Kind() == reflect.Slice:
		return "a list of strings, such as [/a, /b]"
	default:
		return "a string"
	}
}

// given describes the value of a node for an error: a scalar quoted as
// written, else its kind.
func given(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	default:
		return "an alias"
	}
}

// applyEnv sets the fields whose HARNESS_* variable is non-empty and
// records the variable as their source.
func applyEnv(cfg *Config, getenv func(string) string, source map[string]string) error {
	lookup := func(name string) string {
		v := getenv(EnvPrefix + name)
		if v != "" {
			source[strings.ToLower(strings.ReplaceAll(name, "_", "-"))] = EnvPrefix + name
		}
		return v
	}
	str := func(name string, dst *string) {
		if v := lookup(name); v != "" {
			*dst = v
		}
	}
	str("FS", &cfg.FS)
	str("MODE", &cfg.Mode)
	str("WORKSPACE", &cfg.Workspace)
	str("LANDLOCK", &cfg.Landlock)
	str("EXEC", &cfg.Exec)
	str("NETWORK", &cfg.Network)
	str("UNIX_SOCKETS", &cfg.UnixSockets)
	str("EXEC_ISOLATION", &cfg.ExecIsolation)
	str("EXEC_MEMORY", &cfg.ExecMemory)
	str("LOG_LEVEL", &cfg.LogLevel)
	str("LOG_FORMAT", &cfg.LogFormat)
	str("DURABILITY", &cfg.Durability)
	str("VCS", &cfg.VCS)
	str("AUDIT_LOG", &cfg.AuditLog)
	for _, l := range []struct {
		name string
		dst  *[]string
	}{{"TEMP_ROOT", &cfg.TempRoots}, {"WRITABLE_ROOT", &cfg.WritableRoots}, {"EXEC_ENV", &cfg.ExecEnv}, {"UNIX_SOCKET", &cfg.UnixSocketPaths}} {
		if v := lookup(l.name); v != "" {
			*l.dst = filepath.SplitList(v)
		}
	}
	if v := lookup("PROTECT"); v != "" {
		cfg.Protect = strings.Split(v, "\n")
	}
	if v := lookup("UNPROTECT"); v != "" {
		cfg.Unprotect = strings.Split(v, "\n")
	}
	if v := lookup("DENY_READ"); v != "" {
		cfg.DenyRead = strings.Split(v, "\n")
	}
	if v := lookup("ALLOW_READ"); v != "" {
		cfg.AllowRead = strings.Split(v, "\n")
	}
	if v := lookup("ALLOW_DOMAIN"); v != "" {
		cfg.AllowDomains = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	}
	ints := []struct {
		name string
		dst  *int
	}{
		{"READ_LIMIT", &cfg.ReadLimit},
		{"READ_MAX_LINE_LENGTH", &cfg.ReadMaxLineLength},
		{"READ_MAX_BYTES", &cfg.ReadMaxBytes},
		{"LIST_LIMIT", &cfg.ListLimit},
		{"WRITE_MAX_BYTES", &cfg.WriteMaxBytes},
		{"RESULT_TEXT_MAX_BYTES", &cfg.ResultTextMaxBytes},
		{"MAX_CONCURRENT_CALLS", &cfg.MaxConcurrentCalls},
		{"MAX_WAITING_CALLS", &cfg.MaxWaitingCalls},
		{"EXEC_PIDS", &cfg.ExecPids},
	}
	for _, i := range ints {
		if v := lookup(i.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s%s: not an integer: %q", EnvPrefix, i.name, v)
			}
			*i.dst = n
		}
	}
	if v := lookup("EXEC_IDLE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%sEXEC_IDLE_TIMEOUT: not a duration (such as 30m): %q", EnvPrefix, v)
		}
		cfg.ExecIdleTimeout = d
	}
	if v := lookup("CALL_WAIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%sCALL_WAIT: not a duration (such as 30s): %q", EnvPrefix, v)
		}
		cfg.CallWait = d
	}
	if v := lookup("ROOTS_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%sROOTS_TIMEOUT: not a duration (such as 10s): %q", EnvPrefix, v)
		}
		cfg.RootsTimeout = d
	}
	for _, i := range []struct {
		name string
		dst  *int64
	}{{"READ_STREAM_MIN_SIZE", &cfg.ReadStreamMinSize}, {"JOURNAL_MAX_BYTES", &cfg.JournalMaxBytes}} {
		if v := lookup(i.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%s%s: not an integer: %q", EnvPrefix, i.name, v)
			}
			*i.dst = n
		}
	}
	if v := lookup("AUDIT_MAX_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%sAUDIT_MAX_BYTES: not an integer: %q", EnvPrefix, v)
		}
		cfg.AuditMaxBytes = n
	}
	for _, v := range []struct {
		name string
		dst  *bool
	}{
		{"INVARIANTS", &cfg.Invariants},
		{"TOOLCHAIN_CACHES", &cfg.ToolchainCaches},
		{"SHARED_TEMP", &cfg.SharedTemp},
		{"JOURNAL_COMMANDS", &cfg.JournalCommands},
		{"GPG_AGENT", &cfg.GPGAgent},
	} {
		if s := lookup(v.name); s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return fmt.Errorf("%s%s: not a boolean: %q", EnvPrefix, v.name, s)
			}
			*v.dst = b
		}
	}
	if err := httpEnv(cfg, lookup); err != nil {
		return err
	}
	if v := lookup("WORKSPACE_OWNER"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%sWORKSPACE_OWNER: not a boolean: %q", EnvPrefix, v)
		}
		cfg.WorkspaceOwner = b
	}
	return nil
}
