package execsandbox

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// finder asks the policy for the protected paths that exist inside the
// writable roots (sandboxpolicy.Service.ProtectedEntries, the rule the file
// fence shares: never following a symlink, never opening anything that
// could block, in bounded batches, under the call's deadline, with a cache
// of unchanged directories). It fails closed: a search that cannot finish
// refuses the command.
type finder struct {
	policy *sandboxpolicy.Service
	// warming is closed when the warm-up search ends; nil when none was
	// started. A search waits for it rather than read the same
	// directories a second time.
	warming atomic.Pointer[chan struct{}]
	// aliases are the other names of protected files of more than one
	// link (withAliases).
	aliases aliasCache
}

func newFinder(policy *sandboxpolicy.Service) *finder {
	return &finder{policy: policy}
}

// find returns the protected paths inside roots as the command running as
// uid may meet them: in a temp root (shared with other users), only what
// uid owns counts, so nothing another user plants there changes how the
// command runs. Errors: *exec.Error with CodeUnavailable naming where the
// search stopped.
func (f *finder) find(ctx context.Context, roots []string, uid int) ([]sandboxpolicy.ProtectedEntry, error) {
	if w := f.warming.Load(); w != nil {
		select {
		case <-*w:
		case <-ctx.Done():
		}
	}
	return f.search(ctx, roots, uid)
}

// warm runs one search for the cache alone; searches started meanwhile
// wait for it to end (or their own deadline) and then read the cache.
func (f *finder) warm(ctx context.Context, roots []string, uid int) {
	done := make(chan struct{})
	f.warming.Store(&done)
	defer close(done)
	_, _ = f.search(ctx, roots, uid)
}

// search is find without waiting for the warm-up.
func (f *finder) search(ctx context.Context, roots []string, uid int) ([]sandboxpolicy.ProtectedEntry, error) {
	entries, err := f.policy.ProtectedEntries(ctx, roots, uid)
	if err != nil {
		return nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"%s; the command was not run rather than run with protected paths writable (under %s, version-control metadata, the repositories it names, host-run files and --protect matches are read-only for commands)",
			err, sandbox.WorkspaceWrite), Cause: err}
	}
	outside := homeFilesOutside(f.policy.DenyRead().Homes(), f.policy.Protected().HostRun(), roots)
	if entries, err = f.aliases.withAliases(ctx, roots, entries, outside); err != nil {
		return nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"cannot find the other names of a protected file of more than one link: %s; the command was not run rather than run able to write it through them", err), Cause: err}
	}
	return entries, nil
}

// paths returns the paths IsolationLandlock makes read-only: every entry
// that exists, a split git directory included (whole: with no reservation
// for the missing members and no mount point keeping `.git` in place, that
// isolation keeps the stricter rule of --vcs read-only).
func paths(entries []sandboxpolicy.ProtectedEntry) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.Missing {
			out = append(out, e.Path)
		}
	}
	return out
}
