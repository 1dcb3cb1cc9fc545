package audit

import (
	"context"
	"slices"
	"sync"
)

// Entry is the record of one call while it runs. The guard opens it
// (Open), the code beneath annotates it, and Close returns the Record. It
// is safe for concurrent use; every method of a nil *Entry does nothing
// (a call outside the guard, a backend used as a library).
type Entry struct {
	mu sync.Mutex
	r  Record
}

// Open returns the entry of a call of tool: r's Time, Session, Client, Principal,
// Tool and Call fields start it (the rest are ignored).
func Open(r Record) *Entry {
	return &Entry{r: Record{Time: r.Time.UTC(), Session: r.Session, Client: r.Client, Principal: r.Principal, Tool: r.Tool, Call: r.Call, Decision: Allowed}}
}

type ctxKey struct{}

// NewContext returns ctx carrying e.
func NewContext(ctx context.Context, e *Entry) context.Context {
	return context.WithValue(ctx, ctxKey{}, e)
}

// FromContext returns the entry ctx carries, nil when none.
func FromContext(ctx context.Context) *Entry {
	e, _ := ctx.Value(ctxKey{}).(*Entry)
	return e
}

// Update runs fn on the record under the entry's lock: the one way code
// beneath the guard annotates a call (set Mode, add Paths, Changes, Bytes,
// the Command, ...).
func (e *Entry) Update(fn func(r *Record)) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	fn(&e.r)
}

// AddPaths adds canonical paths the call touched, once each, in order;
// past MaxList paths it counts them (PathsMore) instead.
func (e *Entry) AddPaths(paths ...string) {
	e.Update(func(r *Record) {
		for _, p := range paths {
			switch {
			case p == "" || slices.Contains(r.Paths, p):
			case len(r.Paths) < MaxList:
				r.Paths = append(r.Paths, p)
			default:
				r.PathsMore++
			}
		}
	})
}

// AddChange records one path a mutation changed; past MaxList changes it
// counts them (ChangesMore) instead.
func (e *Entry) AddChange(c Change) {
	e.Update(func(r *Record) {
		if len(r.Changes) < MaxList {
			r.Changes = append(r.Changes, c)
		} else {
			r.ChangesMore++
		}
	})
}

// Record returns a copy of the record as it stands, bounded (Bound).
func (e *Entry) Record() Record {
	if e == nil {
		return Record{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return Bound(e.r)
}
