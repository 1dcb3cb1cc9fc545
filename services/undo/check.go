package undo

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/journal"
)

// nodeAt returns the node of nodes at path p, nil when none.
func nodeAt(nodes []journal.Node, p string) *journal.Node {
	for i := range nodes {
		if nodes[i].Path == p {
			return &nodes[i]
		}
	}
	return nil
}

// differs says how the state have differs from want ("" when it does not):
// nil means absent. A file is compared by content, mode and owner; a
// symlink by target; a directory by its identity (inode and device) when
// want records one, else by existence.
func differs(want, have *journal.Node) string {
	switch {
	case want == nil && have == nil:
		return ""
	case want == nil:
		return fmt.Sprintf("a %s is there now, where the change left nothing", have.Type)
	case have == nil:
		return fmt.Sprintf("the %s the change left is gone", want.Type)
	case want.Type != have.Type:
		return fmt.Sprintf("the %s the change left is now a %s", want.Type, have.Type)
	}
	switch want.Type {
	case journal.File:
		switch {
		case want.Hash != have.Hash:
			return "its content changed after the change"
		case want.Mode != have.Mode:
			return fmt.Sprintf("its mode changed from %04o to %04o", want.Mode, have.Mode)
		case want.UID != have.UID || want.GID != have.GID:
			return fmt.Sprintf("its owner changed from %d:%d to %d:%d", want.UID, want.GID, have.UID, have.GID)
		}
	case journal.Symlink:
		if want.Link != have.Link {
			return fmt.Sprintf("it now points at %q, not %q", have.Link, want.Link)
		}
	case journal.Dir:
		if want.Ino != 0 && have.Ino != 0 && (want.Ino != have.Ino || want.Dev != have.Dev) {
			return "another directory is there now"
		}
	}
	return ""
}

// view answers the state at a canonical path: the disk, or the disk as it
// will be once newer changes of a session are undone.
type view interface {
	look(p string) (*journal.Node, error)
}

// diskView is the disk now.
type diskView struct{}

func (diskView) look(p string) (*journal.Node, error) { return lookNode(p) }

// overlay is the disk as it will be after the undos planned so far: the
// state each planned undo leaves at its paths wins over the disk, and
// everything beneath a path it leaves absent is absent.
type overlay struct {
	set map[string]*journal.Node
}

func newOverlay() *overlay { return &overlay{set: map[string]*journal.Node{}} }

func (o *overlay) look(p string) (*journal.Node, error) {
	if n, ok := o.set[p]; ok {
		return n, nil
	}
	for q := p; q != "/"; {
		i := strings.LastIndexByte(q, '/')
		if i <= 0 {
			break
		}
		q = q[:i]
		if n, ok := o.set[q]; ok && (n == nil || n.Type != journal.Dir) {
			return nil, nil
		}
	}
	return lookNode(p)
}

// leave records the state undoing e leaves: its Before at each of its
// paths and every Before node, absent where Before has none. A directory
// the undo makes anew has a new identity, so it is recorded without one.
func (o *overlay) leave(e journal.Entry, moves bool) {
	for _, p := range e.Paths {
		if nodeAt(e.Before, p) == nil {
			o.set[p] = nil
		}
	}
	for _, n := range e.Before {
		if n.Type == journal.Dir && !moves {
			n.Ino, n.Dev = 0, 0
		}
		o.set[n.Path] = &n
	}
}

// mismatch is the first path whose state differs from the wanted one.
type mismatch struct {
	path, reason string
}

// against compares v with the state nodes describe at e's paths: each of
// paths (absent where nodes has none there) and each node of nodes. A
// directory to be removed that holds an entry nodes do not list is a
// mismatch too (an undo removes only what the change made).
func against(v view, paths []string, nodes []journal.Node, emptyCheck []string) (*mismatch, error) {
	seen := map[string]bool{}
	check := func(p string, want *journal.Node) (*mismatch, error) {
		if seen[p] {
			return nil, nil
		}
		seen[p] = true
		have, err := v.look(p)
		if err != nil {
			return nil, err
		}
		if why := differs(want, have); why != "" {
			return &mismatch{path: p, reason: why}, nil
		}
		return nil, nil
	}
	for _, p := range paths {
		if m, err := check(p, nodeAt(nodes, p)); m != nil || err != nil {
			return m, err
		}
	}
	for i := range nodes {
		if m, err := check(nodes[i].Path, &nodes[i]); m != nil || err != nil {
			return m, err
		}
	}
	return addedInto(v, nodes, emptyCheck)
}

// addedInto returns the first entry of the directories dirs (ones an undo
// removes) that nodes do not list: added after the change.
func addedInto(v view, nodes []journal.Node, dirs []string) (*mismatch, error) {
	for _, dir := range dirs {
		names, err := dirNames(v, dir)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			p := dir + "/" + name
			if dir == "/" {
				p = "/" + name
			}
			if nodeAt(nodes, p) == nil {
				return &mismatch{path: p, reason: "it was added after the change, inside a directory the undo removes"}, nil
			}
		}
	}
	return nil, nil
}

// pendingState judges the pending change e node by node against v: each
// of its paths and each node of its Before and After is in the state
// before the change (left alone by the undo), or in the state the change
// was to leave (After, absent where After has nothing: reached is then
// set, the undo restores it), or else changed after it (the first such
// is the mismatch). A directory the undo removes must hold only what
// After lists (removed). A crash in the middle of a change (a recursive
// delete killed part-way) leaves a mix of the first two.
func pendingState(v view, e journal.Entry, removed []string) (m *mismatch, reached bool, err error) {
	after := checked(e)
	paths := slices.Clone(e.Paths)
	for _, n := range e.Before {
		paths = append(paths, n.Path)
	}
	for _, n := range after {
		paths = append(paths, n.Path)
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		have, err := v.look(p)
		if err != nil {
			return nil, false, err
		}
		if differs(nodeAt(e.Before, p), have) == "" {
			continue
		}
		why := differs(nodeAt(after, p), have)
		if why != "" {
			return &mismatch{path: p, reason: "it is in neither the state before the change nor the one it was to leave: " + why}, reached, nil
		}
		reached = true
	}
	m, err = addedInto(v, after, removed)
	return m, reached, err
}

// dirNames lists the directory dir on disk, nil when the view says it is
// absent (a planned undo removes it) or it is missing.
func dirNames(v view, dir string) ([]string, error) {
	if n, err := v.look(dir); err != nil || n == nil || n.Type != journal.Dir {
		return nil, err
	}
	par, base, err := openParent(dir)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil // made by a planned undo: empty until then
	}
	if err != nil {
		return nil, err
	}
	defer par.Close() //nolint:errcheck // read-only use
	sub, err := par.OpenDirNoFollow(base)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer sub.Close() //nolint:errcheck // read-only use
	names, err := sub.Names()
	slices.Sort(names)
	return names, err
}
