package protectscan

import "golang.org/x/sys/unix"

// probes is what one drain of the notifier found at the paths whose
// events it judged, by path: an event is judged by what is there now
// (Scanner.mattersBelow), and every event a drain judges was queued before
// it judged any, so one reading of a path serves every scanner and kept
// result that hears of it, and every later event of the same path in the
// drain (a runner's placeholder is made, marked, given its mode, renamed
// and removed: five events of two names). A change after the reading
// queues an event of its own, judged by the next drain. A nil probes reads
// each time.
type probes map[string]*probe

// probe is one path's reading: its lstat (err when it could not be made)
// and, once asked, whether it is a runner's placeholder.
type probe struct {
	st  unix.Stat_t
	err error
	// held is 0 until placeholder is asked, then 1 for a placeholder, -1
	// for anything else.
	held int8
}

// at returns the reading of p, made at its first request in the drain.
func (ps probes) at(p string) *probe {
	if pr, ok := ps[p]; ok {
		return pr
	}
	pr := &probe{}
	pr.err = unix.Lstat(p, &pr.st)
	if ps != nil {
		ps[p] = pr
	}
	return pr
}

// placeholder reports whether the entry read at p (pr.err nil) is a
// runner's placeholder (placeholderAt), asked of the file system once.
func (pr *probe) placeholder(p string) bool {
	if pr.held == 0 {
		pr.held = -1
		if placeholderAt(p, &pr.st) {
			pr.held = 1
		}
	}
	return pr.held > 0
}
