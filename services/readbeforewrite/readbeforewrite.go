// Package readbeforewrite is the read-before-write policy (spec O-cases):
// per session and target it remembers what the session last saw (nothing,
// absence, or presence at a version) and turns that into the precondition of
// the session's next write or edit, so an agent never overwrites a file it has
// not read, or one that changed since it read it.
package readbeforewrite

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/fx"

	"github.com/dsh-go/harness/internal/weakmap"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/sandbox"
)

// Policy holds the observations of every live session. It is safe for
// concurrent use. A session's record goes when the session is garbage
// collected; nothing is persisted (O-15).
type Policy struct {
	owners weakmap.Map[sandbox.Owner, *record]
}

// record is one session's observations.
type record struct {
	mu   sync.Mutex
	seen map[fs.TargetKey]fs.Observation
}

// New returns a policy with no observations.
func New() *Policy { return &Policy{} }

// WriteIntent decides a write (O-02, O-03, O-16): present at v ->
// ReplaceIfVersion v, with the content a whole-file read saw (spec
// difference 14); unseen, absent, or no session -> CreateIfAbsent, so a
// caller without a session can never overwrite an existing file.
func (p *Policy) WriteIntent(_ context.Context, owner *sandbox.Owner, target fs.Target) (fs.WriteIntent, error) {
	if obs, ok := p.lookup(owner, target.Key); ok && obs.Kind == fs.Present {
		return fs.ReplaceSeen(obs), nil
	}
	return fs.CreateOnly(), nil
}

// EditGuard decides an edit (O-04, O-05): present at v -> that observation
// (version v, and the content a whole-file read saw); absent ->
// FS_NOT_FOUND `cannot edit "<dp>": not found`; unseen or no session ->
// FS_NOT_OBSERVED `edit requires reading "<dp>" first`.
func (p *Policy) EditGuard(_ context.Context, owner *sandbox.Owner, target fs.Target) (fs.Observation, error) {
	dp := target.DisplayPath
	obs, ok := p.lookup(owner, target.Key)
	switch {
	case !ok:
		return fs.Observation{}, &fs.Error{Code: fs.CodeNotObserved, Op: "edit", Path: dp, Message: fmt.Sprintf("edit requires reading %q first", dp)}
	case obs.Kind == fs.Absent:
		return fs.Observation{}, &fs.Error{Code: fs.CodeNotFound, Op: "edit", Path: dp, Message: fmt.Sprintf("cannot edit %q: not found", dp)}
	default:
		return obs, nil
	}
}

// Observe records obs as the session's latest view of target; the last
// recorded observation wins (O-06, O-13). A move (fs.Moved) carries the
// records over: what the session saw of the source is now its view of the
// target (the new version when the session had seen the version that moved,
// so an edit needs no new read; a stale one stays stale), the records
// beneath a moved directory are re-keyed beneath the target, and the source
// is absent. Without a session it records nothing (O-07).
func (p *Policy) Observe(owner *sandbox.Owner, target fs.Target, obs fs.Observation) error {
	if owner == nil {
		return nil
	}
	r, _ := p.owners.LoadOrStore(owner, &record{seen: map[fs.TargetKey]fs.Observation{}})
	r.mu.Lock()
	defer r.mu.Unlock()
	if obs.Kind != fs.Moved {
		r.seen[target.Key] = obs
		return nil
	}
	from, had := r.seen[obs.From]
	switch {
	case had && from.Kind == fs.Present && from.Version == obs.Prior:
		r.seen[target.Key] = fs.Observation{Kind: fs.Present, Version: obs.Version}
	case had && from.Kind == fs.Present:
		r.seen[target.Key] = from // seen at an older version: still stale
	default:
		delete(r.seen, target.Key)
	}
	r.seen[obs.From] = fs.Observation{Kind: fs.Absent}
	prefix := string(obs.From) + "/"
	for key, seen := range r.seen {
		if rest, ok := strings.CutPrefix(string(key), prefix); ok {
			r.seen[fs.TargetKey(string(target.Key)+"/"+rest)] = seen
			delete(r.seen, key)
		}
	}
	return nil
}

// Sessions returns how many sessions have records (for tests and metrics).
func (p *Policy) Sessions() int { return p.owners.Len() }

func (p *Policy) lookup(owner *sandbox.Owner, key fs.TargetKey) (fs.Observation, bool) {
	if owner == nil {
		return fs.Observation{}, false
	}
	r, ok := p.owners.Load(owner)
	if !ok {
		return fs.Observation{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	obs, ok := r.seen[key]
	return obs, ok
}

// Module provides the policy as the composition's fs.IntentPolicy and
// contributes it to the fs.observers group (O-01: it needs nothing).
var Module = fx.Module("readbeforewrite",
	fx.Provide(
		New,
		fx.Annotate(func(p *Policy) fs.IntentPolicy { return p }),
		fx.Annotate(func(p *Policy) fs.Observer { return p }, fx.ResultTags(fs.ObserverGroupTag)),
	),
)

var (
	_ fs.IntentPolicy = (*Policy)(nil)
	_ fs.Observer     = (*Policy)(nil)
)
