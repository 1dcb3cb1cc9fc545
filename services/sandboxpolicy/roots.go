package sandboxpolicy

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/realpath"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// CanonicalPath returns the native realpath of p when it exists (every
// symlink resolved component by component, X-01), else p unchanged.
func CanonicalPath(p string) string {
	resolved, err := realpath.Of(p)
	if err != nil {
		return p
	}
	return resolved
}

// Protected returns the protected paths inside each writable root
// (Config.Protect and the version-control metadata), the set the file fence
// refuses; the command runner (execsandbox) carves the same set out.
func (s *Service) Protected() sandbox.ProtectedPaths { return s.protect }

func dedup(paths []string) []string {
	out := paths[:0:0]
	for _, p := range paths {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// RootPath returns the absolute local path a client root URI names, parsed
// strictly (RFC 8089, deliberate difference 12): the scheme is "file", the
// authority empty or "localhost", with no user, port, query or fragment; the
// percent-decoded path is absolute and clean (no ".", ".." or repeated
// slash, no trailing slash but on "/"), contains no NUL byte, and no
// separator was percent-encoded (%2F, %5C). Every refusal is an error saying
// why. "/" itself parses; whether it may be a workspace root is the
// caller's decision (it may not, under workspace-write).
func RootPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("not a URI: %w", err)
	}
	switch {
	case !strings.EqualFold(u.Scheme, "file"):
		return "", fmt.Errorf("scheme %q is not file", u.Scheme)
	case u.Opaque != "":
		return "", errors.New("a file URI needs an absolute path after file://")
	case u.User != nil || u.Port() != "":
		return "", errors.New("a file URI carries no user or port")
	case u.Host != "" && !strings.EqualFold(u.Host, "localhost"):
		return "", fmt.Errorf("host %q is not local (only an empty host or localhost)", u.Host)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(uri, "#"):
		return "", errors.New("a file URI carries no query or fragment")
	}
	raw := u.EscapedPath()
	lower := strings.ToLower(raw)
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") {
		return "", errors.New("the path percent-encodes a separator")
	}
	p := u.Path
	switch {
	case strings.ContainsRune(p, 0):
		return "", errors.New("the path contains a NUL byte")
	case !strings.HasPrefix(p, "/"):
		return "", errors.New("the path is not absolute")
	case path.Clean(p) != p:
		return "", fmt.Errorf("the path %q is not clean (it would be %q)", p, path.Clean(p))
	}
	return filepath.FromSlash(p), nil
}

// eventRoots is the session event type that sets a session's workspace
// roots (the roots its client announced); its Data is a rootsEvent.
const eventRoots = "workspace/roots"

// rootsEvent is the payload of a "workspace/roots" event: absolute paths,
// the first the directory relative paths resolve against.
type rootsEvent struct {
	Roots []string `json:"roots"`
}

// SetRoots appends one "workspace/roots" event to s: from the next
// resolution on, paths (absolute; what the client announced, in its order)
// are the session's workspace roots, replacing the session's working
// directory as the root set (deliberate difference 12). An empty list means
// the session has no workspace. A root still announced keeps the canonical
// path it was pinned to; a root no longer announced grants nothing from the
// next resolution.
func SetRoots(s *session.Session, paths []string) error {
	return s.Append(session.Event{Type: eventRoots, Data: rootsEvent{Roots: slices.Clone(paths)}})
}

// rootsOf folds the session's log: the roots of its last "workspace/roots"
// event, and false when there is none.
func rootsOf(s *session.Session) ([]string, bool) {
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		if e, ok := events[i].Data.(rootsEvent); ok && events[i].Type == eventRoots {
			return e.Roots, true
		}
	}
	return nil, false
}

// pins are one session's workspace roots, each announced path pinned to the
// canonical path it had at its first resolution.
type pins struct {
	mu sync.Mutex
	m  map[string]string // announced path -> canonical path
}

// canonical returns the canonical roots of announced, in order, pinning the
// new ones and forgetting those no longer announced. A root that is not
// absolute, or that canonicalizes to "/", is left out.
func (p *pins) canonical(announced []string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make(map[string]string, len(announced))
	out := make([]string, 0, len(announced))
	for _, a := range announced {
		c, ok := p.m[a]
		if !ok {
			if !sandbox.GrantableRoot(a) {
				continue
			}
			c = filepath.Clean(CanonicalPath(a))
		}
		next[a] = c
		if sandbox.GrantableRoot(c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	p.m = next
	return out
}

// Boundary returns the boundary a mutation of target (a canonical path)
// crosses under p, or "" when p admits it: danger-full-access admits
// everything; workspace-write admits a target beneath one of
// p.WritableRoots() unless it is a protected path there
// (BoundaryProtected and the rule, decided as the fence decides, by
// ProtectedAt; a search that cannot finish is BoundaryProtected too), and
// otherwise names BoundaryNoWorkspace when p has no workspace root, else
// BoundaryOutside; read-only, and any unknown mode, is BoundaryReadOnly. The
// fence decides again, at mutation time, on a fresh resolution; this
// answers whether an escalation is needed at all and what its prompt
// says.
func (s *Service) Boundary(p sandbox.ExecutionPolicy, target string) string {
	switch p.Mode {
	case sandbox.DangerFullAccess:
		return ""
	case sandbox.WorkspaceWrite:
		for _, root := range p.WritableRoots() {
			if !dirfd.Beneath(root, target) {
				continue
			}
			rule, err := s.ProtectedAt(context.Background(), p, target)
			switch {
			case err != nil:
				// Fail closed: what cannot be searched is not admitted.
				return BoundaryProtected + " (" + err.Error() + ")"
			case rule != "":
				return BoundaryProtected + " (" + rule + ")"
			}
			return ""
		}
		if p.WorkspaceRoot == "" {
			return BoundaryNoWorkspace
		}
		return BoundaryOutside
	default:
		return BoundaryReadOnly
	}
}
