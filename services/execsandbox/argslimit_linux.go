package execsandbox

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// maxViewBinds is how many binds a view may hold (estimated by
// viewBinds) before the git directories of the repositories not holding
// the command's workdir are protected whole. Bubblewrap 0.8 reads the
// whole mount table after each bind it makes (its issue 384), so a
// view's cost grows with the square of its binds: measured here at load
// 12, 79 binds (an empty workspace) took 90 ms a command, 199 (ten
// repositories, twelve binds each) 300 ms, 379 (25) 820 ms, 1,279 (100)
// 8.5 s; a bound of 192 keeps a command under about 300 ms there (nine
// repositories split in an empty workspace), and 100 repositories protected
// whole took 430 ms.
const maxViewBinds = 192

// argsHeadroom is what a view's arguments leave of bubblewrap's limit
// (subproc.MaxBwrapArgs) for what is added to it after (the command's own
// /etc files).
const argsHeadroom = 64

// viewBinds estimates the binds of a view protecting found, with held
// reserved, beneath roots: one per entry and reservation, and one per
// directory between a root and one of them (each bound onto itself).
func viewBinds(found []sandboxpolicy.ProtectedEntry, held []*subproc.Reservation, roots []string) int {
	dirs := map[string]bool{}
	add := func(p string) {
		for d := filepath.Dir(p); d != filepath.Dir(d) && !dirs[d] && !slices.Contains(roots, d); d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for _, e := range found {
		add(e.Path)
	}
	for _, h := range held {
		add(h.Path)
	}
	return len(found) + len(held) + len(dirs)
}

// wholeGitDirs returns found with each split git directory protected whole
// (Split unset, its members' entries dropped, so nothing beneath it is
// reserved either) but those of the repositories holding workdir: one
// whose parent (its worktree) holds workdir, and the git directories
// beneath such a one (its submodules' and linked worktrees' gitdirs); and
// the git directories it made whole, in found's order. Binding a git
// directory whole costs bubblewrap one argument triple where its members
// and the directories on their way cost about twelve.
func wholeGitDirs(found []sandboxpolicy.ProtectedEntry, workdir string) ([]sandboxpolicy.ProtectedEntry, []string) {
	var kept, whole []string
	for _, e := range found {
		if e.Split && dirfd.Beneath(filepath.Dir(e.Path), workdir) {
			kept = append(kept, e.Path)
		}
	}
	for _, e := range found {
		if e.Split && !slices.ContainsFunc(kept, func(k string) bool { return dirfd.Beneath(k, e.Path) }) {
			whole = append(whole, e.Path)
		}
	}
	if len(whole) == 0 {
		return found, nil
	}
	set := make(map[string]bool, len(whole))
	for _, g := range whole {
		set[g] = true
	}
	out := make([]sandboxpolicy.ProtectedEntry, 0, len(found))
	for _, e := range found {
		if set[e.Path] {
			e.Split = false
			out = append(out, e)
			continue
		}
		if !beneathAny(set, e.Path) {
			out = append(out, e)
		}
	}
	return out, whole
}

// beneathAny reports whether one of p's ancestors is in set.
func beneathAny(set map[string]bool, p string) bool {
	for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
		if set[d] {
			return true
		}
	}
	return false
}

// tooManyArgs is the refusal of a view v whose n arguments pass
// bubblewrap's limit even with the git directories made whole: what it
// holds, counted, and what to do.
func tooManyArgs(v startView, n int) *exec.Error {
	return &exec.Error{Code: exec.CodeStartFailed, Message: fmt.Sprintf(
		"the command's view needs %d bubblewrap arguments, more than its limit of %d (%d protected paths, %d reserved, %d masked, %d writable roots; %d git directories already read-only whole); the command was not run. "+
			"Remedy: serve a smaller tree (--workspace a subdirectory, fewer --writable-root), or move out of it what makes so many protected or deny-read paths (repositories, .envrc or .env files)",
		n, subproc.MaxBwrapArgs-argsHeadroom, len(v.conf.Protected), len(v.conf.Reserved), len(v.conf.Masked), len(v.conf.WritableRoots), len(v.whole))}
}
