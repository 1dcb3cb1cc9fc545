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
// paths an approval named) made readable and nothing else (issue 24):
//
//   - a mask that is a lifted path is dropped;
//   - a directory mask above a lifted path is replaced by masks of each of
//     its entries but the one on the way to the lifted path, and so on
//     down to it: the directories on the way show their entries' names,
//     every entry but the lifted path stays masked. A symlink entry is
//     left as it is: reading through it reaches its target, which is
//     masked on its own when the deny-read set denies it;
//   - a lifted path no mask covers is left as it is (readable already).
//
// who is the account the command runs as. Errors (*exec.Error with
// CodeUnavailable, the command is refused rather than run with more or
// less than the approval named): a lifted path that is not absolute and
// clean, no longer exists or is no longer its own canonical path (a
// symlink put in its place since the prompt); one behind a directory the
// command's user cannot search; a file mask above it; a directory on the
// way that cannot be listed or changed under the lift; more than
// maxLiftEntries new masks.
func liftMasks(masks []subproc.Masked, lifted []string, who account) ([]subproc.Masked, error) {
	out := slices.Clone(masks)
	added := 0
	for _, l := range lifted {
		if err := checkLifted(l, who); err != nil {
			return nil, refuseLift(l, err)
		}
		for {
			i := slices.IndexFunc(out, func(m subproc.Masked) bool { return dirfd.Beneath(m.Path, l) })
			if i < 0 {
				break
			}
			m := out[i]
			out = slices.Delete(out, i, i+1)
			if m.Path == l {
				break
			}
			if !m.Dir {
				return nil, refuseLift(l, fmt.Errorf("%s above it is masked as a file", m.Path))
			}
			entries, err := entryMasks(m.Path, l)
			if err != nil {
				return nil, refuseLift(l, err)
			}
			if added += len(entries); added > maxLiftEntries {
				return nil, refuseLift(l, fmt.Errorf("it would take more than %d masks to keep the rest of %s hidden", maxLiftEntries, m.Path))
			}
			out = append(out, entries...)
		}
	}
	slices.SortFunc(out, func(a, b subproc.Masked) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// checkLifted verifies that l is an absolute, clean, canonical path that
// exists and that who can reach (every directory above it searchable).
func checkLifted(l string, who account) error {
	if !filepath.IsAbs(l) || filepath.Clean(l) != l {
		return fmt.Errorf("not an absolute clean path")
	}
	canon, err := filepath.EvalSymlinks(l)
	if err != nil {
		return err
	}
	if canon != l {
		return fmt.Errorf("it now leads to %s", canon)
	}
	if q := who.unsearchable(l); q != "" {
		return fmt.Errorf("the command's user cannot search %s above it", q)
	}
	return nil
}

// entryMasks returns masks of every entry of the directory dir but l
// itself (beneath dir); the entry on the way to l must be l or a
// directory (then masked, for liftMasks to split next); symlinks are left
// out (see liftMasks).
func entryMasks(dir, l string) ([]subproc.Masked, error) {
	rel, err := filepath.Rel(dir, l)
	if err != nil {
		return nil, err
	}
	next := filepath.Join(dir, strings.SplitN(rel, "/", 2)[0])
	info, err := os.Lstat(next)
	if err != nil {
		return nil, err
	}
	if next != l && !info.IsDir() {
		return nil, fmt.Errorf("%s on the way to it is not a directory", next)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []subproc.Masked
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if p == l || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		// The directory on the way is masked too, for the caller to
		// split in turn.
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
