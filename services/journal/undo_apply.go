package journal

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
)

// apply undoes the checked change pl.e: it records the undo (pending, with
// the content it replaces kept) durably, restores, and records how it
// ended with the state it left.
func (u *Undoer) apply(ctx context.Context, pl plan) (Undone, error) {
	e := pl.e
	undo := Entry{
		ID: "", Time: u.now().UTC(), Tool: "undo", Kind: Undo, Undoes: e.ID,
		Paths: slices.Clone(e.Paths), Kept: true, Status: Pending,
	}
	if pl.moves && len(e.Paths) == 2 {
		undo.Paths = []string{e.Paths[1], e.Paths[0]}
	}
	before, keep, err := replaced(e, pl.moves)
	if err != nil {
		return Undone{}, unsafeOr(e, err)
	}
	undo.Before = before
	undo.After = predicted(e, before, pl.moves)
	finish, err := u.io.begin(undo, keep)
	if err != nil {
		return Undone{}, err
	}
	r := &restorer{ctx: ctx, content: func(h string) ([]byte, error) { return pl.content[h], nil }}
	if err := r.undo(e, pl.moves); err != nil {
		ferr := finish(Failed, nil)
		return Undone{}, &UndoError{Code: CodeRestoreFailed, Entry: e.ID, Path: pathOf(err),
			Reason: "the restore failed part-way; what was restored stays, the undo is recorded as failed", Err: errors.Join(err, ferr)}
	}
	after, err := measured(undo)
	if err != nil {
		after = undo.After
	}
	undo.After = after
	undo.Status = Applied
	if err := finish(Applied, after); err != nil {
		return Undone{}, err
	}
	return Undone{Entry: e, Undo: undo, Notes: r.notes}, nil
}

// undo restores e's Before: a move moves its entry back (and restores what
// it replaced); otherwise each path is removed where the change made it,
// and each Before node is put back, parents first; directories' modes and
// times last.
func (r *restorer) undo(e Entry, moves bool) error {
	if moves && len(e.Paths) == 2 {
		src, dst := e.Paths[0], e.Paths[1]
		if err := r.moveBack(dst, src, nodeAt(e.After, src) != nil); err != nil {
			return err
		}
		for _, n := range e.Before {
			if beneath(dst, n.Path) {
				if err := r.put(n); err != nil {
					return err
				}
			}
		}
		return r.finish()
	}
	done := map[string]bool{}
	for _, p := range e.Paths {
		a, b := nodeAt(e.After, p), nodeAt(e.Before, p)
		if a != nil && (b == nil || a.Type == Dir && b.Type != Dir) {
			if err := r.removeTree(e.After, p); err != nil {
				return err
			}
		}
		for _, n := range e.Before {
			if beneath(p, n.Path) && !done[n.Path] {
				done[n.Path] = true
				if err := r.put(n); err != nil {
					return err
				}
			}
		}
	}
	for _, n := range e.Before {
		if !done[n.Path] {
			if err := r.put(n); err != nil {
				return err
			}
		}
	}
	return r.finish()
}

// removeTree removes the entry at p and the entries nodes list beneath it,
// deepest first.
func (r *restorer) removeTree(nodes []Node, p string) error {
	for i := len(nodes) - 1; i >= 0; i-- {
		if nodes[i].Path != p && beneath(p, nodes[i].Path) {
			if err := r.remove(nodes[i].Path); err != nil {
				return err
			}
		}
	}
	return r.remove(p)
}

// replaced reads the state an undo of e replaces: the node at each path
// and, beneath a path whose entry it removes, every entry After lists,
// with the content of each file (key -> bytes) to keep. A move's entry is
// moved, not replaced: its content is not kept again.
func replaced(e Entry, moves bool) ([]Node, map[string][]byte, error) {
	var (
		nodes []Node
		keep  = map[string][]byte{}
		seen  = map[string]bool{}
	)
	add := func(p string) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		n, err := lookNode(p)
		if err != nil || n == nil {
			return err
		}
		nodes = append(nodes, *n)
		if n.Type == File && !(moves && p == e.Paths[len(e.Paths)-1]) {
			b, err := readContent(p)
			if err != nil {
				return err
			}
			keep[n.Hash] = b
		}
		return nil
	}
	for _, p := range e.Paths {
		if err := add(p); err != nil {
			return nil, nil, err
		}
		for _, n := range e.After {
			if n.Path != p && beneath(p, n.Path) {
				if err := add(n.Path); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return nodes, keep, nil
}

// readContent reads the regular file at p through a parent resolved
// without symlinks, never following one at p.
func readContent(p string) ([]byte, error) {
	par, base, err := openParent(p)
	if err != nil {
		return nil, err
	}
	defer par.Close() //nolint:errcheck // read-only use
	f, _, err := par.OpenRead(base)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read-only use
	return io.ReadAll(f)
}

// predicted is the state the undo of e is to leave, recorded with it
// before it runs so that a crash is judged by the disk: e's Before, a
// moved entry keeping the identity it has now (in before), a directory
// made anew with none.
func predicted(e Entry, before []Node, moves bool) []Node {
	out := make([]Node, 0, len(e.Before)+1)
	if moves && len(e.Paths) == 2 {
		if now := nodeAt(before, e.Paths[1]); now != nil {
			n := *now
			n.Path = e.Paths[0]
			out = append(out, n)
		}
	}
	for _, n := range e.Before {
		if moves && n.Path == e.Paths[0] {
			continue
		}
		if n.Type == Dir {
			n.Ino, n.Dev = 0, 0
		}
		out = append(out, n)
	}
	return out
}

// measured reads the state the undo left at its paths and at each node it
// predicted.
func measured(undo Entry) ([]Node, error) {
	var out []Node
	seen := map[string]bool{}
	for _, p := range undo.Paths {
		seen[p] = true
		n, err := lookNode(p)
		if err != nil {
			return nil, err
		}
		if n != nil {
			out = append(out, *n)
		}
	}
	for _, w := range undo.After {
		if seen[w.Path] {
			continue
		}
		seen[w.Path] = true
		n, err := lookNode(w.Path)
		if err != nil {
			return nil, err
		}
		if n != nil {
			out = append(out, *n)
		}
	}
	return out, nil
}

// pathOf returns the path an error names, "" when none.
func pathOf(err error) string {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Path
	}
	return ""
}
