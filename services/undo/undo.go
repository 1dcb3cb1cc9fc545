// Package undo undoes the changes services/journal recorded (`harness undo`,
// issue 25): it checks every path of a change, or of a whole session's
// changes, against the state the change left, refuses with nothing changed
// when one differs (JOURNAL_CHANGED_SINCE, unless forced) or a symlink was
// planted on the way (JOURNAL_UNSAFE_PATH, always), and restores the prior
// state, bytes and metadata exact, journaling the undo itself so it can be
// undone in turn. It reads the journal through its API only.
package undo

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/journal"
)

// Options tune an undo. Force restores even where a path changed
// after the change (CodeChangedSince); it never writes through a planted
// symlink (CodeUnsafePath) nor restores content the journal no longer has.
type Options struct {
	Force bool
}

// Undone is one change undone: Entry the change, Undo the undo's own
// journal entry (which `harness undo` can undo in turn), Notes what could
// not be restored exactly (an owner this process may not give).
type Undone struct {
	Entry journal.Entry
	Undo  journal.Entry
	Notes []string
}

// Skipped is a change a session undo left alone, and why: undone already,
// it did not publish, or (a crash) it never reached the disk.
type Skipped struct {
	Entry  journal.Entry
	Reason string
}

// SessionResult is what UndoSession did: the changes undone, newest first,
// and those skipped.
type SessionResult struct {
	Undone  []Undone
	Skipped []Skipped
}

// Undoer undoes journaled changes, one or a whole session's, checking
// every path against the state the change left first: all of a session's
// changes are checked before anything changes, so one refusal changes
// nothing. Every path is resolved from "/" without following a symlink.
// Each undo is journaled in j (Kind Undo, Undoes the change, Before the
// state it replaced with its content), so it can be undone in turn.
type Undoer struct {
	j *journal.Journal
}

// New returns the undoer of the journal j.
func New(j *journal.Journal) *Undoer { return &Undoer{j: j} }

// plan is one undo, checked and ready: the change, whether it moves, and
// the kept content its Before needs (key -> bytes).
type plan struct {
	e       journal.Entry
	moves   bool
	content map[string][]byte
}

// Undo undoes the change id. Errors: *Error (CodeNotFound,
// CodeAlreadyUndone, CodeNothingToUndo, CodeNotKept, CodeDropped,
// CodeChangedSince, CodeUnsafePath: nothing changed; CodeRestoreFailed: the
// disk refused the restore, the undo recorded failed when nothing had
// changed, else applied with the state it left), or the journal's *Error.
func (u *Undoer) Undo(ctx context.Context, id string, opts Options) (Undone, error) {
	all, err := u.j.List(journal.ListOptions{})
	if err != nil {
		return Undone{}, err
	}
	byID := indexByID(all)
	e, ok := byID[id]
	if !ok {
		return Undone{}, refusal(journal.CodeNotFound, id, "", "no journaled change has this ID (see `harness history`)")
	}
	if by := UndoneBy(all)[id]; by != "" {
		return Undone{}, refusal(CodeAlreadyUndone, id, "", "undone already by %s (undo %s to bring it back)", by, by)
	}
	pl, skip, err := u.plan(e, byID, diskView{}, opts)
	if err != nil {
		return Undone{}, err
	}
	if skip != "" {
		return Undone{}, refusal(CodeNothingToUndo, id, "", "%s", skip)
	}
	return u.apply(ctx, pl)
}

// UndoSession undoes every change of session that stands, newest first.
// Every one is checked first, against the disk as the newer undos will
// leave it; one refusal returns its *Error and changes nothing. Changes
// undone already, failed, or pending with the disk in their prior state
// are skipped. Errors: as Undo's; CodeNotFound when the session has no
// change; CodeRestoreFailed stops at the change that failed, the result
// holding those undone before it.
func (u *Undoer) UndoSession(ctx context.Context, session string, opts Options) (SessionResult, error) {
	var out SessionResult
	all, err := u.j.List(journal.ListOptions{})
	if err != nil {
		return out, err
	}
	byID := indexByID(all)
	undone := UndoneBy(all)
	var mine []journal.Entry
	for _, e := range all {
		if e.Session == session && session != "" {
			mine = append(mine, e)
		}
	}
	if len(mine) == 0 {
		return out, refusal(journal.CodeNotFound, "", "", "the session %q has no journaled change (see `harness history`)", session)
	}
	slices.Reverse(mine)
	ov := newOverlay()
	var plans []plan
	for _, e := range mine {
		if by := undone[e.ID]; by != "" {
			out.Skipped = append(out.Skipped, Skipped{Entry: e, Reason: "undone already by " + by})
			continue
		}
		pl, skip, err := u.plan(e, byID, ov, opts)
		if err != nil {
			return SessionResult{Skipped: out.Skipped}, err
		}
		if skip != "" {
			out.Skipped = append(out.Skipped, Skipped{Entry: e, Reason: skip})
			continue
		}
		ov.leave(e, pl.moves)
		plans = append(plans, pl)
	}
	for _, pl := range plans {
		done, err := u.apply(ctx, pl)
		if err != nil {
			return out, err
		}
		out.Undone = append(out.Undone, done)
	}
	return out, nil
}

func indexByID(all []journal.Entry) map[string]journal.Entry {
	byID := make(map[string]journal.Entry, len(all))
	for _, e := range all {
		byID[e.ID] = e
	}
	return byID
}

// plan checks that e can be undone against v: it published, its prior
// content is kept, every path is in the state e left (unless Force), no
// symlink lies on the way. A skip reason says there is nothing to undo.
func (u *Undoer) plan(e journal.Entry, byID map[string]journal.Entry, v view, opts Options) (plan, string, error) {
	pl := plan{e: e, moves: moveLike(e, byID), content: map[string][]byte{}}
	if e.Status == journal.Failed {
		return pl, "it did not publish (status failed): nothing to undo", nil
	}
	if e.Kind == journal.Command && len(e.Before) == 0 && len(e.After) == 0 {
		return pl, "a command's changes are not in the journal", nil
	}
	if e.Dropped {
		return pl, "", refusal(journal.CodeDropped, e.ID, "", "it was dropped from the journal to keep the journal within its cap: it cannot be undone")
	}
	if !e.Kept {
		reason := "its prior content was not kept"
		if e.NotKept != "" {
			reason += " (" + e.NotKept + ")"
		}
		return pl, "", refusal(CodeNotKept, e.ID, "", "%s: it cannot be undone", reason)
	}
	m, err := against(v, e.Paths, checked(e), removedDirs(e, pl.moves))
	if err != nil {
		return pl, "", unsafeOr(e, err)
	}
	if m != nil && e.Status == journal.Pending {
		// A crash left it pending, maybe part-way (a recursive delete
		// killed mid-tree): the disk says, node by node, which side each
		// entry is on.
		var reached bool
		m, reached, err = pendingState(v, e, removedDirs(e, pl.moves))
		if err != nil {
			return pl, "", unsafeOr(e, err)
		}
		if m == nil && !reached {
			return pl, "it never reached the disk (pending, and every path is in its prior state): nothing to undo", nil
		}
	}
	if m != nil && !opts.Force {
		return pl, "", refusal(CodeChangedSince, e.ID, m.path, "%s; nothing was changed (--force restores anyway)", m.reason)
	}
	if dir, err := missingParent(v, e); err != nil || dir != "" {
		if err != nil {
			return pl, "", unsafeOr(e, err)
		}
		return pl, "", refusal(CodeChangedSince, e.ID, dir, "the directory to restore into is gone (deleted or replaced after the change); nothing was changed")
	}
	for _, n := range e.Before {
		if n.Type != journal.File || pl.content[n.Hash] != nil {
			continue
		}
		b, err := u.content(n.Hash)
		if err != nil {
			if je, ok := errors.AsType[*journal.Error](err); ok && (je.Code == journal.CodeDropped || je.Code == journal.CodeNotFound) {
				return pl, "", &Error{
					Code: journal.CodeDropped, Entry: e.ID, Path: n.Path,
					Reason: "its prior content was dropped from the journal to keep it within its cap", Err: err,
				}
			}
			return pl, "", err
		}
		pl.content[n.Hash] = b
	}
	return pl, "", nil
}

// content reads the kept content of key hash whole.
func (u *Undoer) content(hash string) ([]byte, error) {
	rc, _, err := u.j.OpenBlob(hash)
	if err != nil {
		return nil, err
	}
	defer rc.Close() //nolint:errcheck // read-only; reading to the end checks it
	return io.ReadAll(rc)
}

// missingParent returns the first directory a Before node of e is to be
// restored into that v says is not a directory, "" when all are; a
// directory Before restores itself counts as there.
func missingParent(v view, e journal.Entry) (string, error) {
	for _, n := range e.Before {
		dir := filepath.Dir(n.Path)
		if nodeAt(e.Before, dir) != nil {
			continue
		}
		have, err := v.look(dir)
		if err != nil {
			return "", err
		}
		if have == nil || have.Type != journal.Dir {
			return dir, nil
		}
	}
	return "", nil
}

// checked returns the After state e is checked against: a directory by
// identity where After records one (a moved directory), except a
// directory mkdir made, checked by existence.
func checked(e journal.Entry) []journal.Node {
	if e.Kind != journal.Mkdir {
		return e.After
	}
	out := slices.Clone(e.After)
	for i := range out {
		out[i].Ino, out[i].Dev = 0, 0
	}
	return out
}

// removedDirs returns the directories the undo of e removes (After has
// them where Before has nothing), whose content must be what After lists;
// none for a move, whose entry moves back whole.
func removedDirs(e journal.Entry, moves bool) []string {
	if moves {
		return nil
	}
	var dirs []string
	for _, p := range e.Paths {
		if nodeAt(e.Before, p) != nil {
			continue
		}
		for _, n := range e.After {
			if n.Type == journal.Dir && dirfd.Beneath(p, n.Path) {
				dirs = append(dirs, n.Path)
			}
		}
	}
	return dirs
}

// unsafeOr turns errUnsafe into a CodeUnsafePath refusal.
func unsafeOr(e journal.Entry, err error) error {
	if errors.Is(err, errUnsafe) {
		path := ""
		if pe, ok := errors.AsType[*os.PathError](err); ok {
			path = pe.Path
		}
		return &Error{
			Code: CodeUnsafePath, Entry: e.ID, Path: path,
			Reason: "a directory on the way is now a symlink, planted after the change; undo never writes through one, even with --force", Err: err,
		}
	}
	return err
}
