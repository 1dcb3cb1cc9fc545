package sandboxpolicy

import (
	"path/filepath"
	"slices"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/realpath"
	"github.com/dsh-go/harness/services/sandbox"
)

// Reservable returns the paths a command of policy may never create, nor a
// file tool (the protected-path rule refuses each by name, and a move that
// would bring one along with a directory): in
// each workspace root, the top-level `.git` and each host-run file in force
// (protect.HostRun) but a home's own (HostRun.Home: `.bashrc`, `.profile`,
// `.config/fish`, which the shells read only in a home) when the root is
// no home (isHome: none of homes, of the user database's, nor $ZDOTDIR);
// in each of homes that lies beneath a workspace root,
// each host-run file but the root-only ones (a missing `.bashrc` there is
// read by the home's shell as one at a root's top is); and each host-run
// directory (protect.HostRunDirs: $XDG_CONFIG_HOME's git and fish) beneath
// a workspace root; and where a home's host-run name or a host-run
// directory leads into one through a symlink (homeLinksIn). Not in the temp roots, where a reserved path would sit
// above every other user's work.
func Reservable(policy sandbox.ExecutionPolicy, protect sandbox.ProtectedPaths, homes []string) []string {
	if z := zdotdir(); z != "" && !slices.Contains(homes, z) {
		// zsh reads its start-up files there, as in a home (a ZDOTDIR in
		// a dotfiles workspace: the second review).
		homes = append(slices.Clone(homes), z)
	}
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
		home := isHome(r, homes)
		for _, f := range protect.HostRun() {
			if home || !f.Home {
				add(filepath.Join(r, f.Name))
			}
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
	for _, p := range homeLinksIn(policy, protect, homes) {
		add(p)
	}
	return out
}

// homeLinksIn returns where the host-run names of homes (but the root-only
// ones), and the host-run directories, lead through a symlink
// (realpath.Named), when that lies beneath one of policy's workspace roots:
// `~/.config -> ~/dotfiles/config` with the workspace ~/dotfiles, where a
// command made config/git/config, or with the workspace ~ itself, where the
// write tool wrote `.config/git/config` through the link (the reviews'
// inputs). A name whose way cannot be resolved (a loop, a link through
// /proc) is left out: the runner refuses its commands (reserveAbove).
func homeLinksIn(policy sandbox.ExecutionPolicy, protect sandbox.ProtectedPaths, homes []string) []string {
	var roots []string
	for _, r := range append([]string{policy.WorkspaceRoot}, policy.OtherRoots...) {
		if sandbox.GrantableRoot(r) {
			roots = append(roots, filepath.Clean(r))
		}
	}
	var named []string
	for _, h := range homes {
		for _, f := range protect.HostRun() {
			if !f.Top {
				named = append(named, filepath.Join(h, f.Name))
			}
		}
	}
	named = append(named, protect.HostRunDirs()...)
	var out []string
	for _, p := range named {
		at, links, err := realpath.Named(p)
		if err != nil || len(links) == 0 || slices.Contains(out, at) {
			continue
		}
		if slices.ContainsFunc(roots, func(r string) bool { return at != r && dirfd.Beneath(r, at) }) {
			out = append(out, at)
		}
	}
	return out
}
