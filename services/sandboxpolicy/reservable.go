package sandboxpolicy

import (
	"path/filepath"
	"slices"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/sandbox"
)

// Reservable returns the paths a command of policy may never create, nor a
// file tool (the protected-path rule refuses each by name, and a move that
// would bring one along with a directory): in
// each workspace root, the top-level `.git` and each host-run file in force
// (protect.HostRun); in each of homes that lies beneath a workspace root,
// each host-run file but the root-only ones (a missing `.bashrc` there is
// read by the home's shell as one at a root's top is); and each host-run
// directory (protect.HostRunDirs: $XDG_CONFIG_HOME's git and fish) beneath
// a workspace root. Not in the temp roots, where a reserved path would sit
// above every other user's work.
func Reservable(policy sandbox.ExecutionPolicy, protect sandbox.ProtectedPaths, homes []string) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, r := range append([]string{policy.WorkspaceRoot}, policy.OtherRoots...) {
		if !sandbox.GrantableRoot(r) {
			continue
		}
		r = filepath.Clean(r)
		add(filepath.Join(r, ".git"))
		for _, f := range protect.HostRun() {
			add(filepath.Join(r, f.Name))
		}
		for _, h := range homes {
			if h != r && dirfd.Beneath(r, h) {
				for _, f := range protect.HostRun() {
					if !f.Top {
						add(filepath.Join(h, f.Name))
					}
				}
			}
		}
		for _, d := range protect.HostRunDirs() {
			if d != r && dirfd.Beneath(r, d) {
				add(d)
			}
		}
	}
	return out
}
