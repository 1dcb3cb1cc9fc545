package execsandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"

	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// finder finds the protected paths that exist inside the writable roots
// (internal/protectscan: never following a symlink, never opening anything
// that could block, in bounded batches, under the call's deadline, with a
// cache of unchanged directories). It fails closed: a search it cannot
// finish refuses the command.
type finder struct {
	policy  *sandboxpolicy.Service
	scanner *protectscan.Scanner
	// warming is closed when the warm-up search ends; nil when none was
	// started. A search waits for it rather than read the same
	// directories a second time.
	warming atomic.Pointer[chan struct{}]
}

func newFinder(policy *sandboxpolicy.Service) *finder {
	return &finder{policy: policy, scanner: protectscan.New(protectscan.Options{})}
}

// find returns the protected paths inside roots as the command running as
// uid may meet them: in a temp root (shared with other users), only what
// uid owns counts, so nothing another user plants there changes how the
// command runs. Errors: *exec.Error with CodeUnavailable naming where the
// search stopped.
func (f *finder) find(ctx context.Context, roots []string, uid int) ([]subproc.Protected, error) {
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
func (f *finder) search(ctx context.Context, roots []string, uid int) ([]subproc.Protected, error) {
	temps := f.policy.Default().TempRoots
	scan := make([]protectscan.Root, 0, len(roots))
	for _, r := range roots {
		if _, err := os.Lstat(r); err != nil {
			continue // a missing root grants nothing and holds nothing
		}
		scan = append(scan, protectscan.Root{Path: r, Shared: slices.Contains(temps, r), Owner: uid})
	}
	protect := f.policy.Protected()
	entries, err := f.scanner.Scan(ctx, scan, protect.ProtectedEntry)
	if err != nil {
		var budget *protectscan.BudgetError
		reason := err.Error()
		if errors.As(err, &budget) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			reason = "the search for protected paths did not finish: " + reason
		}
		return nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
			"%s; the command was not run rather than run with protected paths writable (under %s, .git, .hg, .jj, .svn and --protect matches are read-only for commands)",
			reason, sandbox.WorkspaceWrite)}
	}
	out := make([]subproc.Protected, 0, len(entries))
	for _, e := range entries {
		out = append(out, subproc.Protected{Path: e.Path, Dev: e.Dev, Ino: e.Ino})
	}
	return out, nil
}

// paths returns the paths of entries.
func paths(entries []subproc.Protected) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Path
	}
	return out
}
