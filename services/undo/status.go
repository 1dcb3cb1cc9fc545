package undo

import (
	"github.com/dsh-go/harness/services/journal"
)

// UndoneBy returns, for each change of entries (the journal, oldest first)
// that stands undone, the ID of the undo that undid it: an applied Undo
// entry whose Undoes names it and which is not itself undone. Undoing an
// undo brings the change back.
func UndoneBy(entries []journal.Entry) map[string]string {
	undoes := map[string][]string{} // id -> the applied undos of it, in order
	for _, e := range entries {
		if e.Kind == journal.Undo && e.Status == journal.Applied && e.Undoes != "" {
			undoes[e.Undoes] = append(undoes[e.Undoes], e.ID)
		}
	}
	out := map[string]string{}
	memo := map[string]bool{}
	var undone func(id string, depth int) (string, bool)
	undone = func(id string, depth int) (string, bool) {
		if depth > len(entries) {
			return "", false // a cycle cannot come from the journal; fail safe
		}
		if v, ok := memo[id]; ok && !v {
			return "", false
		}
		by := undoes[id]
		for i := len(by) - 1; i >= 0; i-- {
			if _, back := undone(by[i], depth+1); !back {
				memo[id] = true
				return by[i], true
			}
		}
		memo[id] = false
		return "", false
	}
	for _, e := range entries {
		if by, ok := undone(e.ID, 0); ok {
			out[e.ID] = by
		}
	}
	return out
}

// moveLike reports whether undoing e moves an entry back: e is a move, or
// an undo of a change that moves (its Paths are then the move's, from
// where the entry was to where it goes back).
func moveLike(e journal.Entry, byID map[string]journal.Entry) bool {
	for range len(byID) + 1 {
		if e.Kind == journal.Move {
			return true
		}
		if e.Kind != journal.Undo {
			return false
		}
		next, ok := byID[e.Undoes]
		if !ok {
			return false
		}
		e = next
	}
	return false
}
