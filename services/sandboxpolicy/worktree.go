package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/sandbox"
)

// maxPointerBytes bounds the git pointer files read (`.git`, commondir,
// gitdir).
const maxPointerBytes = 4096

// worktreeRoots returns the directories git writes for a workspace root
// that is a linked worktree whose repository lies outside it (issue 36:
// one worktree per agent, `git worktree add ../wt`): the worktree's own
// git directory (`<repo>/.git/worktrees/<id>`: its index, HEAD, logs) and
// the repository's objects/, refs/ and logs/, so `git add`, `commit`,
// `stash` and `rebase` work under sandbox.VCSCommit. The repository's
// config, hooks, info/ and everything else of it stay outside every root,
// read-only; the worktree's config.worktree, commondir and gitdir are its
// read-only members (the protected-path search splits it as it does any
// git directory in a root).
//
// Only a worktree laid out as git makes it is taken: root/.git is a
// regular file naming its git directory ("gitdir: PATH"), that directory
// lies in the repository's worktrees/ and names back root/.git (its own
// gitdir file), its commondir names that repository (HEAD, objects/ and
// refs/), and each returned directory is a real directory (no symlink) of
// root's owner. Anything else returns nil: a crafted `.git` file cannot
// make another directory writable. Directories already beneath one of
// roots are left out (a repository inside the workspace).
func worktreeRoots(root string, roots []string) []string {
	if root == "" {
		return nil
	}
	var rootSt syscall.Stat_t
	if syscall.Stat(root, &rootSt) != nil {
		return nil
	}
	dotGit := filepath.Join(root, ".git")
	target, ok := readPointer(dotGit, "gitdir: ")
	if !ok {
		return nil
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(root, target)
	}
	gitdir, err := filepath.EvalSymlinks(target)
	if err != nil {
		return nil
	}
	back, ok := readPointer(filepath.Join(gitdir, "gitdir"), "")
	if !ok || filepath.Clean(CanonicalPath(back)) != filepath.Clean(CanonicalPath(dotGit)) {
		return nil
	}
	common, ok := readPointer(filepath.Join(gitdir, "commondir"), "")
	if !ok {
		return nil
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	if common, err = filepath.EvalSymlinks(common); err != nil || filepath.Dir(gitdir) != filepath.Join(common, "worktrees") {
		return nil
	}
	if fi, err := os.Lstat(filepath.Join(common, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	var out []string
	for _, d := range []string{gitdir, filepath.Join(common, "objects"), filepath.Join(common, "refs"), filepath.Join(common, "logs")} {
		var st syscall.Stat_t
		if syscall.Lstat(d, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Uid != rootSt.Uid {
			if d == filepath.Join(common, "logs") {
				continue // git makes logs/ when it first writes a reflog
			}
			return nil
		}
		beneath := false
		for _, r := range roots {
			beneath = beneath || dirfd.Beneath(r, d)
		}
		if !beneath {
			out = append(out, d)
		}
	}
	return out
}

// readPointer reads the small regular file p (not through a symlink at p)
// and returns its first line after prefix.
func readPointer(p, prefix string) (string, bool) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxPointerBytes {
		return "", false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	rest, ok := strings.CutPrefix(line, prefix)
	rest = strings.TrimSpace(rest)
	return rest, ok && rest != "" && !strings.ContainsRune(rest, 0)
}

// withWorktrees adds to p, under workspace-write with sandbox.VCSCommit,
// the roots git writes for each workspace root that is a linked worktree of
// a repository outside the roots (worktreeRoots), as extra roots.
func (s *Service) withWorktrees(p sandbox.ExecutionPolicy) sandbox.ExecutionPolicy {
	if p.Mode != sandbox.WorkspaceWrite || s.protect.VCS() != sandbox.VCSCommit {
		return p
	}
	roots := p.WritableRoots()
	for _, r := range append([]string{p.WorkspaceRoot}, p.OtherRoots...) {
		if add := worktreeRoots(r, roots); len(add) > 0 {
			p.ExtraRoots = dedup(append(slices.Clone(p.ExtraRoots), add...))
			roots = append(roots, add...)
		}
	}
	return p
}
