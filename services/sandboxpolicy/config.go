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
	// It is canonicalized, then resolved lexically (P-02).
	WorkspaceRoot string `yaml:"workspaceRoot" json:"workspaceRoot"`
	// TempRoots are the platform temp areas that workspace-write also
	// allows; nil means "/tmp" and os.TempDir(). Each must be an
	// absolute path other than "/".
	TempRoots []string `yaml:"tempRoots" json:"tempRoots"`
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
	if cfg.WorkspaceRoot == "" {
		wd, err := os.Getwd()
		if err != nil {
			return cfg, fmt.Errorf("sandboxpolicy: WorkspaceRoot is empty and the working directory is unknown: %w", err)
		}
		cfg.WorkspaceRoot = wd
	}
	if !filepath.IsAbs(cfg.WorkspaceRoot) || strings.ContainsRune(cfg.WorkspaceRoot, 0) {
		return cfg, fmt.Errorf("sandboxpolicy: WorkspaceRoot must be an absolute path, got %q", cfg.WorkspaceRoot)
	}
	cfg.WorkspaceRoot = filepath.Clean(CanonicalPath(cfg.WorkspaceRoot))
	if cfg.TempRoots == nil {
		cfg.TempRoots = defaultTempRoots()
	}
	temps := make([]string, 0, len(cfg.TempRoots))
	for _, r := range cfg.TempRoots {
		if strings.TrimSpace(r) == "" || !filepath.IsAbs(r) || strings.ContainsRune(r, 0) {
			return cfg, fmt.Errorf("sandboxpolicy: TempRoots entries must be absolute paths, got %q", r)
		}
		c := filepath.Clean(CanonicalPath(r))
		if c == "/" {
			// Fail closed: a temp root of "/" would make workspace-write
			// as wide as danger-full-access.
			return cfg, fmt.Errorf("sandboxpolicy: TempRoots entry %q resolves to \"/\", which would allow writes anywhere; use mode %s for that", r, sandbox.DangerFullAccess)
		}
		temps = append(temps, c)
	}
	cfg.TempRoots = dedup(temps)
	return cfg, nil
}
