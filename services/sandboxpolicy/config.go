package sandboxpolicy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-go/harness/services/sandbox"
)

// Config configures the policy service. The zero value is valid: read-only,
// the process working directory, the platform temp areas.
type Config struct {
	// Mode is the deployment default mode; empty means ReadOnly (P-01).
	Mode sandbox.Mode `yaml:"mode" json:"mode"`
	// WorkspaceRoot is the fallback workspace root for calls whose session
	// has no working directory; empty means the process working directory.
	// It is canonicalized, then resolved lexically (P-02). Under
	// workspace-write a root that canonicalizes to "/" is an error; the
	// process working directory never becomes "/": there is then no
	// workspace (deliberate difference 12).
	WorkspaceRoot string `yaml:"workspaceRoot" json:"workspaceRoot"`
	// TempRoots are the platform temp areas that workspace-write also
	// allows; nil means "/tmp" and os.TempDir(). Each must be an
	// absolute path other than "/".
	TempRoots []string `yaml:"tempRoots" json:"tempRoots"`
	// WritableRoots are extra directories that workspace-write also
	// allows, for the file fence and the command runner alike (build
	// caches such as the Go build cache; --writable-root). Each must be
	// an absolute path other than "/"; nil means none.
	WritableRoots []string `yaml:"writableRoots" json:"writableRoots"`
	// Protect are gitignore-style patterns of protected paths inside each
	// writable root besides version-control metadata (--protect; see
	// sandbox.NewProtectedPaths, whose errors New returns). Boundary names a
	// protected path as a boundary of its own, so an escalation for one
	// asks the approver (deliberate difference 11).
	Protect []string `yaml:"protect" json:"protect"`
	// Unprotect are names of default host-run files
	// (sandbox.HostRunFiles) left writable (--unprotect); a name that is
	// none of them is an error of New.
	Unprotect []string `yaml:"unprotect" json:"unprotect"`
	// VCS is how version-control metadata is protected under
	// workspace-write (--vcs); "" means sandbox.VCSCommit.
	VCS sandbox.VCS `yaml:"vcs" json:"vcs"`
	// ConfigFile is harness's own configuration file ("" for none), made
	// read-only where it lies inside a writable root, and never read by a
	// tool or a command; it is canonicalized.
	ConfigFile string `yaml:"configFile" json:"configFile"`
	// Executables are harness's own executable, as the running binary and
	// as the command that started it name it (absolute; canonicalized):
	// made read-only where they lie inside a writable root, so a command
	// cannot replace the file a client starts again unconfined
	// (sandbox.ProtectOptions.Executables). A symlink on the way to one
	// inside a writable root is an *ExecutableError of New (see
	// executables).
	Executables []string `yaml:"executables" json:"executables"`
	// PrivateFiles are more of harness's own files (the HTTP front end's
	// token file, principals file, TLS certificate and key): in the
	// deny-read set like ConfigFile, so no tool or command reads or
	// changes them.
	PrivateFiles []string `yaml:"privateFiles" json:"privateFiles"`
	// PrincipalRoots are the workspaces of every principal of the HTTP
	// front end (issue 26): directories some session may write although
	// the call at hand may not. Commands look for the any-depth deny-read
	// patterns (.env) in them too, so one principal's command does not
	// read another's secrets, and harness's own files may not lie in them.
	PrincipalRoots []string `yaml:"principalRoots" json:"principalRoots"`
	// DenyRead are gitignore-style patterns neither tool family reads,
	// added to sandbox.DenyReadDefaults (--deny-read; see
	// sandbox.NewDenyRead, whose errors New returns).
	DenyRead []string `yaml:"denyRead" json:"denyRead"`
	// AllowRead are default deny-read patterns dropped, each spelled as
	// the default is (--allow-read).
	AllowRead []string `yaml:"allowRead" json:"allowRead"`
	// Homes are the home directories `~` stands for in a deny-read
	// pattern; nil means the server user's ($HOME, else the password
	// database's) and, when the server runs as root, the owner's of the
	// fallback workspace root too.
	Homes []string `yaml:"homes" json:"homes"`
}

// defaultTempRoots returns the platform temp areas: "/tmp" and os.TempDir()
// (from $TMPDIR), the latter only when it is absolute: a relative $TMPDIR
// names no fixed place, so it grants nothing.
func defaultTempRoots() []string {
	roots := []string{"/tmp"}
	if t := os.TempDir(); filepath.IsAbs(t) {
		roots = append(roots, t)
	}
	return roots
}

// validate returns cfg with defaults applied and paths canonicalized, or an
// error that names the field and the allowed values (P-09).
func (cfg Config) validate() (Config, error) {
	if cfg.Mode == "" {
		cfg.Mode = sandbox.ReadOnly
	}
	if !cfg.Mode.Valid() {
		return cfg, fmt.Errorf("sandboxpolicy: unknown mode %q: allowed values are %s", string(cfg.Mode), allowed())
	}
	fallback := cfg.WorkspaceRoot == ""
	if fallback {
		wd, err := os.Getwd()
		if err != nil {
			return cfg, fmt.Errorf("sandboxpolicy: WorkspaceRoot is empty and the working directory is unknown: %w", err)
		}
		cfg.WorkspaceRoot = wd
	}
	if !filepath.IsAbs(cfg.WorkspaceRoot) || strings.ContainsRune(cfg.WorkspaceRoot, 0) {
		return cfg, fmt.Errorf("sandboxpolicy: WorkspaceRoot must be an absolute path, got %q", cfg.WorkspaceRoot)
	}
	given := cfg.WorkspaceRoot
	cfg.WorkspaceRoot = filepath.Clean(CanonicalPath(cfg.WorkspaceRoot))
	switch {
	case cfg.WorkspaceRoot != "/":
	case fallback:
		// The process working directory is "/": no workspace, never the
		// whole volume.
		cfg.WorkspaceRoot = ""
	case cfg.Mode == sandbox.WorkspaceWrite:
		return cfg, fmt.Errorf("sandboxpolicy: WorkspaceRoot %q resolves to \"/\", which would let workspace-write write anywhere; use mode %s for that", given, sandbox.DangerFullAccess)
	}
	if cfg.ConfigFile != "" {
		if !filepath.IsAbs(cfg.ConfigFile) {
			return cfg, fmt.Errorf("sandboxpolicy: ConfigFile must be an absolute path, got %q", cfg.ConfigFile)
		}
		cfg.ConfigFile = filepath.Clean(CanonicalPath(cfg.ConfigFile))
	}
	if cfg.TempRoots == nil {
		cfg.TempRoots = defaultTempRoots()
	}
	var err error
	if cfg.TempRoots, err = canonicalRoots("TempRoots", cfg.TempRoots); err != nil {
		return cfg, err
	}
	if cfg.WritableRoots, err = canonicalRoots("WritableRoots", cfg.WritableRoots); err != nil {
		return cfg, err
	}
	if cfg.PrincipalRoots, err = canonicalRoots("PrincipalRoots", cfg.PrincipalRoots); err != nil {
		return cfg, err
	}
	if cfg.Executables, err = cfg.executables(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// canonicalRoots returns roots canonicalized and deduplicated, or an error
// naming field when one is not absolute or resolves to "/".
func canonicalRoots(field string, roots []string) ([]string, error) {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if strings.TrimSpace(r) == "" || !filepath.IsAbs(r) || strings.ContainsRune(r, 0) {
			return nil, fmt.Errorf("sandboxpolicy: %s entries must be absolute paths, got %q", field, r)
		}
		c := filepath.Clean(CanonicalPath(r))
		if c == "/" {
			// Fail closed: a root of "/" would make workspace-write as
			// wide as danger-full-access.
			return nil, fmt.Errorf("sandboxpolicy: %s entry %q resolves to \"/\", which would allow writes anywhere; use mode %s for that", field, r, sandbox.DangerFullAccess)
		}
		out = append(out, c)
	}
	return dedup(out), nil
}
