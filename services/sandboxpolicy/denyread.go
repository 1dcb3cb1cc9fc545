package sandboxpolicy

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/dsh-go/harness/services/sandbox"
)

// DenyRead returns the deployment's deny-read set (issue 24): the paths
// neither tool family reads in any mode, the same value for the file
// fence, the command runner and `harness policy`.
func (s *Service) DenyRead() sandbox.DenyRead { return s.denyRead }

// PrincipalRoots returns the workspaces of every principal of the HTTP
// front end (Config.PrincipalRoots), canonical; nil without principals.
func (s *Service) PrincipalRoots() []string { return cloned(s.cfg.PrincipalRoots) }

// newDenyRead builds cfg's deny-read set: its patterns over the defaults,
// `~` standing for each of cfg's homes, and harness's own files (its
// configuration file, and its configuration and state directories where
// $XDG_CONFIG_HOME or $XDG_STATE_HOME move them out of the defaults, and
// its private files).
func newDenyRead(cfg Config) (sandbox.DenyRead, error) {
	homes := cfg.Homes
	if homes == nil {
		homes = defaultHomes(cfg.WorkspaceRoot)
	}
	var files []string
	if cfg.ConfigFile != "" {
		files = append(files, cfg.ConfigFile)
	}
	for _, f := range cfg.PrivateFiles {
		if filepath.IsAbs(f) {
			files = append(files, f)
		}
	}
	for _, env := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME"} {
		if d := os.Getenv(env); filepath.IsAbs(d) {
			files = append(files, filepath.Join(CanonicalPath(d), "harness"))
		}
	}
	return sandbox.NewDenyRead(sandbox.DenyReadOptions{Patterns: cfg.DenyRead, Allow: cfg.AllowRead, Homes: homes, Files: files})
}

// configHome returns $XDG_CONFIG_HOME, canonical, when it is absolute and
// not `/`; else "".
func configHome() string {
	d := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(d) || filepath.Clean(d) == "/" {
		return ""
	}
	return filepath.Clean(CanonicalPath(d))
}

// defaultHomes returns the server user's home directory ($HOME when it is
// absolute, else the password database's) and, for a root server, the
// home of workspace's owner too (a root server's commands run as that
// owner), each canonical, deduplicated.
func defaultHomes(workspace string) []string {
	var homes []string
	addHome := func(h string) {
		if filepath.IsAbs(h) && filepath.Clean(h) != "/" {
			h = filepath.Clean(CanonicalPath(h))
			if !slices.Contains(homes, h) {
				homes = append(homes, h)
			}
		}
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		addHome(h)
	} else if u, err := user.Current(); err == nil {
		addHome(u.HomeDir)
	}
	if os.Geteuid() == 0 && workspace != "" {
		if fi, err := os.Stat(workspace); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
				if u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10)); err == nil {
					addHome(u.HomeDir)
				}
			}
		}
	}
	return homes
}
