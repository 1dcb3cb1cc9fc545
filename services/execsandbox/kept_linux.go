package execsandbox

import (
	"sync"

	"github.com/dsh-go/harness/internal/subproc"
)

// keptReservations are the reservations a runner holds from the command
// that made them until it closes, not for one command: a git directory's
// `commondir` placeholder (a file holding `.`, the git directory itself,
// what its absence means). git reads that file where it finds it (an lstat,
// then a read that must succeed: "failed to read .git/commondir"), so one
// removed at each command's end made a host's git that looked in between
// fail (TestHostRewritesGitConfig). Kept, it appears once, whole (made
// under a temporary name and renamed), and goes when the runner closes.
// The other placeholders a command makes go with it: an empty file or
// directory that vanishes is only absent to its readers.
type keptReservations struct {
	mu sync.Mutex
	by map[string]*subproc.Reservation
}

// holding returns path's kept reservation when it is still its entry
// (subproc.Reservation.Current), nil otherwise; one that is not (its
// directory removed and made again, the placeholder removed by the
// directory's owner) is released and forgotten, and path is reserved again
// by the caller.
func (k *keptReservations) holding(path string) *subproc.Reservation {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.by[path]
	if !ok {
		return nil
	}
	if r.Current() {
		return r
	}
	delete(k.by, path)
	subproc.ReleaseAll(r)
	return nil
}

// maxKept bounds the reservations a runner keeps (a descriptor each):
// past it, a workspace of that many repositories has the further ones'
// placeholders made and removed with each command, as before.
const maxKept = 256

// keep takes r over when path holds no current reservation of the runner,
// and reports whether it did; when it did not (another command's view kept
// one meanwhile, or maxKept are kept), r is the caller's, to release with
// the command's own. Kept reservations no longer current (their repository
// removed) are released first.
func (k *keptReservations) keep(r *subproc.Reservation) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old, ok := k.by[r.Path]; ok && old.Current() {
		return false
	}
	var gone []*subproc.Reservation
	for p, old := range k.by {
		if !old.Current() {
			gone = append(gone, old)
			delete(k.by, p)
		}
	}
	subproc.ReleaseAll(gone...)
	if len(k.by) >= maxKept {
		return false
	}
	if k.by == nil {
		k.by = map[string]*subproc.Reservation{}
	}
	k.by[r.Path] = r
	return true
}

// close releases every kept reservation (each placeholder no other command
// holds is removed).
func (k *keptReservations) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	rs := make([]*subproc.Reservation, 0, len(k.by))
	for _, r := range k.by {
		rs = append(rs, r)
	}
	k.by = nil
	subproc.ReleaseAll(rs...)
}
