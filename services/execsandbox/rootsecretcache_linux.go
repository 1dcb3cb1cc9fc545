package execsandbox

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/dirwatch"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/sandbox"
)

// secretCache keeps the last rootSecrets result current instead of walking
// the system's directories for every uid-0 command (issue 34: that walk was
// half of such a command's cost). A later command with the same roots, home
// and groups reuses the result while nothing the walk read or judged
// reported a change (dirwatch: in a directory, a name made, removed or
// moved; a directory's or file's own owner, mode or times changed by any
// path, another hard link or a mount's source included; one removed or
// moved), the server's mount table (/proc/self/mountinfo) is the same, and
// the walk could watch all of them (a quarter of the user's inotify
// watches at most; each file counts). Otherwise the command walks, as every
// one did before. It keeps one result: commands of another key walk again. One serves the
// process (rootSecretCache): root's secrets are the host's, and each cache
// holds an inotify instance, of which a user has 128.
type secretCache struct {
	mu     sync.Mutex
	key    string
	set    *dirwatch.Set // nil: nothing kept
	mounts []byte
	out    []subproc.Masked
}

// rootSecretCache is the process's secretCache.
var rootSecretCache secretCache

// get returns rootSecrets(ctx, policy, home, gids), the kept result when it
// is still current and fresh is false. Errors: rootSecrets'.
func (c *secretCache) get(ctx context.Context, policy sandbox.ExecutionPolicy, home string, gids []uint32, fresh bool) ([]subproc.Masked, error) {
	key := fmt.Sprint(systemRoots(policy.Roots()), "\x00", home, "\x00", gids)
	// Read before the walk: a mount made while it runs differs at the
	// next command.
	mounts := dirwatch.MountTable()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !fresh && c.set != nil && c.key == key && mounts != nil && bytes.Equal(mounts, c.mounts) && !c.set.Changed() {
		return slices.Clone(c.out), nil
	}
	c.dropLocked()
	set, err := dirwatch.New(dirwatch.Budget())
	if err != nil {
		set = nil // no inotify instance: walked each time
	}
	out, watched, err := rootSecrets(ctx, policy, home, gids, set)
	if set != nil && (err != nil || !watched || mounts == nil) {
		_ = set.Close()
		set = nil
	}
	if err != nil {
		return nil, err
	}
	if set != nil {
		c.key, c.set, c.mounts, c.out = key, set, mounts, slices.Clone(out)
	}
	return out, nil
}

// systemRoots returns the roots rootSecrets' walk can meet: beneath a
// system directory, or holding one. Others (a session's temp area in /tmp,
// a workspace in /home) change nothing it decides, so they are not part of
// a kept result's key.
func systemRoots(roots []string) []string {
	return slices.DeleteFunc(slices.Clone(roots), func(r string) bool {
		return !slices.ContainsFunc(systemDirs, func(top string) bool {
			return dirfd.Beneath(top, r) || dirfd.Beneath(r, top)
		})
	})
}

// dropLocked forgets the kept result; the caller holds mu.
func (c *secretCache) dropLocked() {
	if c.set != nil {
		_ = c.set.Close()
	}
	c.key, c.set, c.mounts, c.out = "", nil, nil, nil
}
