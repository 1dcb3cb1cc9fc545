package execsandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
)

// maxLiftEntries bounds the masks one lift may put in place of a masked
// directory's (its entries, recursively along the way to the lifted
// paths); more is refused.
const maxLiftEntries = 4096

// liftMasks returns masks (find's: canonical, none beneath another) with
// exactly the lifted paths (exec.Request.LiftedReads: canonical absolute
// paths an approval named, a directory's with a trailing slash) made
// readable and nothing else (issues 24, 35):
//
//   - a file's mask that is a lifted path is dropped: its content becomes
//     readable;
//   - a lifted directory becomes its listing only: its mask is replaced by
//     masks of each of its entries, so the names of its entries read and
//     what they hold does not (a file stays an empty file of mode 0000, a
//     directory empty) unless that entry is lifted as well;
//   - a directory mask above a lifted path is replaced by masks of each of
//     its entries but the one on the way to the lifted path, and so on
//     down to it: the directories on the way show their entries' names,
//     every entry but the lifted path stays masked. A symlink entry is
//     left as it is: reading through it reaches its target, which is
//     masked on its own when the deny-read set denies it;
//   - a lifted path no mask covers is left as it is (readable already; the
//     masks beneath a directory stay).
//
// who is the account the command runs as. Errors (*exec.Error with
// CodeUnavailable, the command is refused rather than run with more or
// less than the approval named): a lifted path that is not absolute and
// clean, no longer exists, is no longer its own canonical path (a symlink
// put in its place since the prompt) or is no longer of the kind named (a
// directory without the trailing slash, a file with it); one behind a
// directory the command's user cannot search; a file mask above it; a
// directory on the way that cannot be listed or changed under the lift;
// more than maxLiftEntries new masks.
func liftMasks(masks []subproc.Masked, lifted []string, who account) ([]subproc.Masked, error) {
	out := slices.Clone(masks)
	added := 0
	for _, named := range lifted {
		l, dir := strings.CutSuffix(named, "/")
		if err := checkLifted(l, dir, who); err != nil {
			return nil, refuseLift(named, err)
		}
		for {
			i := slices.IndexFunc(out, func(m subproc.Masked) bool { return dirfd.Beneath(m.Path, l) })
			if i < 0 {
				break
			}
			m := out[i]
			out = slices.Delete(out, i, i+1)
			if m.Path == l && !dir {
				break
			}
			if !m.Dir {
				return nil, refuseLift(named, fmt.Errorf("%s is masked as a file", m.Path))
			}
			except := ""
			if m.Path != l {
				// The entry on the way stays masked when it is a
				// directory, to be split next (a lifted directory
				// too: its listing only).
				next, err := onTheWay(m.Path, l)
				if err != nil {
					return nil, refuseLift(named, err)
				}
				if next == l && !dir {
					except = next
				}
			}
			entries, err := entryMasks(m.Path, except)
			if err != nil {
				return nil, refuseLift(named, err)
			}
			if added += len(entries); added > maxLiftEntries {
				return nil, refuseLift(named, fmt.Errorf("it would take more than %d masks to keep the rest of %s hidden", maxLiftEntries, m.Path))
			}
			out = append(out, entries...)
			if m.Path == l {
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b subproc.Masked) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// checkLifted verifies that l is an absolute, clean, canonical path that
// exists, is a directory exactly when dir, and that who can reach (every
// directory above it searchable).
func checkLifted(l string, dir bool, who account) error {
	if !filepath.IsAbs(l) || filepath.Clean(l) != l || l == "/" {
		return fmt.Errorf("not an absolute clean path")
	}
	canon, err := filepath.EvalSymlinks(l)
	if err != nil {
		return err
	}
	if canon != l {
		return fmt.Errorf("it now leads to %s", canon)
	}
	info, err := os.Lstat(l)
	if err != nil {
		return err
	}
	switch {
	case info.IsDir() && !dir:
		return fmt.Errorf("it is a directory, named as a file: a directory is named with a trailing slash and lifts its listing only")
	case !info.IsDir() && dir:
		return fmt.Errorf("it is not a directory, named as one")
	}
	if q := who.unsearchable(l); q != "" {
		return fmt.Errorf("the command's user cannot search %s above it", q)
	}
	return nil
}

// onTheWay returns the entry of the directory dir on the way to l (beneath
// dir): l itself, or a directory. Errors: it is missing, or neither.
func onTheWay(dir, l string) (string, error) {
	rel, err := filepath.Rel(dir, l)
	if err != nil {
		return "", err
	}
	next := filepath.Join(dir, strings.SplitN(rel, "/", 2)[0])
	info, err := os.Lstat(next)
	if err != nil {
		return "", err
	}
	if next != l && !info.IsDir() {
		return "", fmt.Errorf("%s on the way to it is not a directory", next)
	}
	return next, nil
}

// entryMasks returns masks of every entry of the directory dir but except
// ("" for none); symlinks are left out (see liftMasks).
func entryMasks(dir, except string) ([]subproc.Masked, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []subproc.Masked
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if p == except || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		out = append(out, subproc.Masked{Path: p, Dir: e.IsDir()})
	}
	return out, nil
}

// refuseLift is the error of an approved read that cannot be made exact.
func refuseLift(path string, why error) error {
	return &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
		"the approved read of %s cannot be lifted exactly (%v); the command was not run rather than run with more or less readable than approved. "+
			"Remedy: ask again naming the path as it is now", path, why)}
}
