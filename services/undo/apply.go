package undo

import (
	"context"
	"errors"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/journal"
)

// apply undoes the checked change pl.e: it records the undo durably
// (pending, with the state it replaces and that state's content captured
// from disk, and the state it is to leave), restores, and records how it
// ended with the state it left.
func (u *Undoer) apply(ctx context.Context, pl plan) (Undone, error) {
	e := pl.e
	undo := journal.Entry{Tool: "undo", Kind: journal.Undo, Undoes: e.ID, Paths: slices.Clone(e.Paths)}
	if pl.moves && len(e.Paths) == 2 {
		undo.Paths = []string{e.Paths[1], e.Paths[0]}
	}
	if err := u.j.Prepare(""); err != nil {
		return Undone{}, err
	}
	tx, err := u.j.Begin(undo)
	if err != nil {
		return Undone{}, err
	}
	before, err := capture(tx, e.Paths, pl.moves)
	if err != nil {
		tx.Abort()
		return Undone{}, unsafeOr(e, err)
	}
	tx.SetAfter(predicted(e, before, pl.moves))
	undo, err = tx.Commit()
	if err != nil {
		return Undone{}, err
	}
	r := &restorer{ctx: ctx, content: func(h string) ([]byte, error) { return pl.content[h], nil }}
	rerr := r.undo(e, pl.moves)
	if rerr != nil && !r.touched {
		ferr := u.j.Finish(undo.ID, journal.Failed, nil)
		return Undone{}, &Error{
			Code: CodeRestoreFailed, Entry: e.ID, Path: pathOf(rerr),
			Reason: "the restore failed before changing anything", Err: errors.Join(rerr, ferr),
		}
	}
	// Applied, even part-way: it changed something, recorded with the
	// state it left, so that it can be undone.
	if after, err := measured(undo); err == nil {
		undo.After = after
	}
	ferr := u.j.Finish(undo.ID, journal.Applied, undo.After)
	if rerr != nil {
		return Undone{}, &Error{
			Code: CodeRestoreFailed, Entry: e.ID, Path: pathOf(rerr),
			Reason: "the restore failed part-way; what was restored stays, recorded as the undo " + undo.ID + " (`harness undo " + undo.ID + "` takes it back)",
			Err:    errors.Join(rerr, ferr),
		}
	}
	if ferr != nil {
		return Undone{}, ferr
	}
	undo.Status = journal.Applied
	return Undone{Entry: e, Undo: undo, Notes: r.notes}, nil
}

// capture records in tx the state at each of paths (a directory with
// every entry beneath it), content included: what the undo replaces. The
// entry a move moves back (at paths[1]) is not replaced, only moved: its
// own node is enough.
func capture(tx *journal.Txn, paths []string, moves bool) ([]journal.Node, error) {
	var before []journal.Node
	for i, p := range paths {
		capture := tx.Capture
		if moves && i == 1 {
			capture = tx.CaptureNode
		}
		par, base, err := openParent(p)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		nodes, err := capture(par, base, p)
		_ = par.Close()
		if err != nil {
			return nil, err
		}
		before = append(before, nodes...)
	}
	return before, nil
}

// undo restores e's Before: a move moves its entry back (and restores what
// it replaced); otherwise each path is removed where the change made it,
// and each Before node is put back, parents first; directories' modes and
// times last.
func (r *restorer) undo(e journal.Entry, moves bool) error {
	if moves && len(e.Paths) == 2 {
		src, dst := e.Paths[0], e.Paths[1]
		if err := r.moveBack(dst, src, nodeAt(e.After, src) != nil); err != nil {
			return err
		}
		for _, n := range e.Before {
			if dirfd.Beneath(dst, n.Path) {
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
		if a != nil && (b == nil || a.Type == journal.Dir && b.Type != journal.Dir) {
			if err := r.removeTree(e.After, p); err != nil {
				return err
			}
		}
		for _, n := range e.Before {
			if dirfd.Beneath(p, n.Path) && !done[n.Path] {
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
func (r *restorer) removeTree(nodes []journal.Node, p string) error {
	for i := len(nodes) - 1; i >= 0; i-- {
		if nodes[i].Path != p && dirfd.Beneath(p, nodes[i].Path) {
			if err := r.remove(nodes[i].Path); err != nil {
				return err
			}
		}
	}
	return r.remove(p)
}

// predicted is the state the undo of e is to leave, recorded with it
// before it runs so that a crash is judged by the disk: e's Before, a
// moved entry keeping the identity it has now (in before), a directory
// made anew with none.
func predicted(e journal.Entry, before []journal.Node, moves bool) []journal.Node {
	out := make([]journal.Node, 0, len(e.Before)+1)
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
		if n.Type == journal.Dir {
			n.Ino, n.Dev = 0, 0
		}
		out = append(out, n)
	}
	return out
}

// measured reads the state the undo left at its paths and at each node it
// predicted.
func measured(undo journal.Entry) ([]journal.Node, error) {
	var out []journal.Node
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
