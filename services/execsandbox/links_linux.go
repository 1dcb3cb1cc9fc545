package execsandbox

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/realpath"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// protectedLink is a protected entry that is a symlink (a `.bashrc` linked
// to `dotfiles/bashrc`) as a command's start found it: what it links to is
// bound read-only (sandboxpolicy.ProtectedEntry.Via), but the link itself,
// an entry of a writable directory, is not: a command can remove it and put
// a file of its own in its place, which the host's shell or git then reads
// (the attack review of issue 34). restoreLinks puts it back.
type protectedLink struct {
	path, target string
	dev, ino     uint64
}

// linksOf returns the symlinks found protected (each Via of found, or its
// directory: `~/.config` linked, for `.config/git`; and every further link
// the host follows from a Via to what it protects, linkChain: `.envrc ->
// l1 -> real/envrc`, whose `l1` a command could point at a file of its own,
// the review's A8) and those met on the way to a reserved name (met), that
// lie beneath one of roots (a command can change no other), with their
// targets and identities now; one that is no symlink now is left out (the
// search is about to be made again).
func linksOf(found []sandboxpolicy.ProtectedEntry, met, roots []string) []protectedLink {
	var out []protectedLink
	add := func(p string) {
		var st unix.Stat_t
		if slices.ContainsFunc(out, func(l protectedLink) bool { return l.path == p }) ||
			!slices.ContainsFunc(roots, func(r string) bool { return dirfd.Beneath(r, p) && r != p }) ||
			unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return
		}
		if target, ok := realpath.ReadLink(p); ok {
			out = append(out, protectedLink{path: p, target: target, dev: dirfd.Dev(&st), ino: st.Ino})
		}
	}
	for _, e := range found {
		if e.Via != "" {
			add(filepath.Dir(e.Via))
			for _, l := range linkChain(e.Via) {
				add(l)
			}
		}
	}
	for _, p := range met {
		add(p)
	}
	return out
}

// linkChain returns the symlinks met resolving the absolute path p
// (realpath.Named), in order: p itself, when it is one, then each link its
// target and their components lead through.
func linkChain(p string) []string {
	_, links, _ := realpath.Named(p)
	return links
}

// restoreLinks checks, once a command has ended, each link its start found
// protected: one the command replaced (a file, a directory or another
// symlink there now) is moved aside, to a name beside it that says so, and
// the link is made again as it was, and each is reported. A link the
// command only removed is left removed: nothing is read there then.
func restoreLinks(links []protectedLink) (out []exec.DisarmedState) {
	for _, l := range links {
		var st unix.Stat_t
		if err := unix.Lstat(l.path, &st); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK && (dirfd.Dev(&st) == l.dev && st.Ino == l.ino || linksTo(l.path, l.target)) {
			continue // the link, or one made again as it was (stow -R, chezmoi apply: ln -sfn)
		}
		d := exec.DisarmedState{Path: l.path, Runs: "a protected link's place, which the host reads through it", Found: "an entry in place of the link to " + l.target, Link: true}
		d.Action = relink(l)
		out = append(out, d)
	}
	return out
}

// linksTo reports whether the symlink p names target.
func linksTo(p, target string) bool {
	t, ok := realpath.ReadLink(p)
	return ok && t == target
}

// relink moves what is at l.path aside (l.path.harness-replaced-N, never
// over anything) and makes the link again, through the directory holding
// it, following no symlink; it says what it did.
func relink(l protectedLink) string {
	dfd, err := openParent(l.path)
	if err != nil {
		return "could not open its directory: " + err.Error()
	}
	defer unix.Close(dfd) //nolint:errcheck // a path descriptor
	name := filepath.Base(l.path)
	for range 16 {
		aside := name + ".harness-replaced-" + strconv.FormatUint(rand.Uint64()%1e6, 10)
		err = unix.Renameat2(dfd, name, dfd, aside, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "could not move it aside: " + err.Error()
		}
		if err := unix.Symlinkat(l.target, dfd, name); err != nil {
			return fmt.Sprintf("moved to %s; the link could not be made again: %v", aside, err)
		}
		return fmt.Sprintf("moved to %s; the link to %s made again", aside, l.target)
	}
	return "could not move it aside: every name tried was taken"
}
