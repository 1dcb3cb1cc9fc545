package execsandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/services/sandbox"
)

// socketWalker finds the socket files inside a command's roots, whatever
// the listings say: a command may rename a directory in a writable root,
// so a socket bound beneath it lives on at a path /proc/net/unix does not
// name (review of issue 24, F2), and a socket bound in another mount
// namespace (a container's, on a host volume in the workspace) is listed
// by a path of that namespace (issue 35). It keeps one
// internal/protectscan scanner per root (its Match looks at the file
// beneath that root, so each root is its own predicate): a later command
// reads again only the directories that changed.
type socketWalker struct {
	mu       sync.Mutex
	scanners map[string]*protectscan.Scanner
}

func newSocketWalker() *socketWalker {
	return &socketWalker{scanners: map[string]*protectscan.Scanner{}}
}

// scanner returns root's scanner, made at its first use.
func (w *socketWalker) scanner(root string) *protectscan.Scanner {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.scanners[root]
	if !ok {
		s = protectscan.New(protectscan.Options{Sockets: true})
		w.scanners[root] = s
	}
	return s
}

// walked returns the regions to walk for the sockets of a command of
// policy run as uid: every root policy names (the workspace, the other and
// temp roots, writable or not: a socket bound in another namespace may lie
// in any of them) and, under danger-full-access, where the whole
// filesystem is writable, the user's runtime directory /run/user/UID (the
// systemd, D-Bus, gpg-agent sockets).
func walked(policy sandbox.ExecutionPolicy, uid uint32) []string {
	if policy.Mode != sandbox.DangerFullAccess {
		return policy.Roots()
	}
	return append(policy.Roots(), filepath.Join("/run/user", strconv.FormatUint(uint64(uid), 10)))
}

// find returns the absolute paths of the socket files inside
// walked(policy, uid), never following a symlink. In a temp root other
// users write to (policy.Shared) only the directories and sockets of uid,
// the command's user, are looked at (protectscan.Root.Shared): another
// user's directory there is one the command's user cannot rename, and a
// socket in it is found by the listings when it is bound at that path. Errors: the scan ran out of its budget
// (*protectscan.BudgetError), of ctx's time, or into a directory it could
// not read; the caller refuses the command (fail closed).
func (w *socketWalker) find(ctx context.Context, policy sandbox.ExecutionPolicy, uid uint32) ([]string, error) {
	var out []string
	for _, r := range walked(policy, uid) {
		if _, err := os.Lstat(r); err != nil {
			continue
		}
		entries, err := w.scanner(r).Scan(ctx, []protectscan.Root{{Path: r, Shared: policy.Shared(r), Owner: int(uid)}}, nil)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.Dir {
				out = append(out, e.Path)
			}
		}
	}
	return out, nil
}
