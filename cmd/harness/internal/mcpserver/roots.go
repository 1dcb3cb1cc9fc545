package mcpserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/principal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// rootsKey is the input request id of a roots request.
const rootsKey = "roots"

// DefaultRootsTimeout is how long a session waits for the client's answer to
// roots/list when Options.RootsTimeout is zero.
const DefaultRootsTimeout = 30 * time.Second

// session returns the connection's session, creating it on the first call,
// and keeps its workspace roots in step with the client (issue 14, deliberate
// difference 12). With Options.Workspace, that directory is the session's
// cwd and only root, and the client's roots are never asked for. Otherwise,
// for a client that declares roots, every usable file:// root it announces is
// a workspace root (sandboxpolicy.SetRoots; the first is the cwd), asked at
// the first call and again at the first call after each
// notifications/roots/list_changed; an unusable root is logged with the
// reason and grants nothing. A client that declares no roots, or does not
// answer roots/list within Options.RootsTimeout (logged), gets the process
// working directory, never "/". For a 2026-07-28 client that offers roots,
// the roots travel as an input-required result; ask is then non-nil.
//
// Over HTTP (who.http, issue 26) a session never falls back to the process
// working directory or the policy's fallback root: without roots it has no
// workspace. A session of a principal (who.principal) has its principal's
// workspaces as roots, narrowed by the client's (Principal.Narrow: only client
// roots inside them count; none inside leaves all of them), asked and
// re-asked as above, and starts in its principal's standing mode under its
// widest mode (startPrincipal).
func (s *Server) session(ctx context.Context, c *conn, req *mcp.CallToolRequest, newProto bool, who caller) (sess *session.Session, ask *mcp.CallToolResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stale := c.rootsStale.Load()
	fixed := s.opts.Workspace != "" && who.principal == nil
	if c.sess != nil && (!stale || fixed) {
		return c.sess, nil
	}
	var (
		roots     []string
		announced bool
	)
	if !fixed {
		uris, ok, err := s.clientRoots(ctx, req, newProto)
		switch {
		case errors.Is(err, errAskRoots):
			return nil, &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{rootsKey: &mcp.ListRootsParams{}}}
		case err != nil && c.sess != nil:
			// The roots changed and the new ones are unknown: fail closed,
			// no root of the old list stays writable.
			s.log.Warn("the client's roots changed but roots/list failed: no workspace until it answers", zap.Error(err))
			announced = true
		case err != nil && who.principal != nil:
			s.log.Warn("the client's roots are unknown: the session gets its principal's workspaces", zap.Error(err))
			roots, announced = slices.Clone(who.principal.Workspaces), true
		case err != nil:
			s.log.Warn("the client's roots are unknown: falling back to the working directory", zap.Error(err))
		case ok && who.principal != nil:
			// Narrowed on canonical paths: a client root spelled through
			// a symlink in the workspace names where the link leads.
			var canon []string
			for _, r := range s.usableRoots(uris) {
				canon = append(canon, filepath.Clean(sandboxpolicy.CanonicalPath(r)))
			}
			roots, announced = who.principal.Narrow(canon), true
		case who.principal != nil:
			roots, announced = slices.Clone(who.principal.Workspaces), true
		case ok:
			roots, announced = s.usableRoots(uris), true
		}
	}
	if who.http {
		// An HTTP session never falls back to the process's working
		// directory, nor to the policy's fallback root: what it was
		// given (a principal's workspaces, --workspace, the client's
		// roots) or nothing.
		announced = announced || !fixed
	}
	if c.sess == nil && who.http {
		if front := s.front.Load(); front != nil {
			leave, refusal := front.admitSession(who.name)
			if refusal != "" {
				s.log.Warn("a principal's session is refused: its sessions are at their cap", zap.String("principal", who.name))
				return nil, toResult(tool.ErrorResult(refusal, CodeSessionLimit))
			}
			c.leave = leave
		}
	}
	c.rootsStale.Store(false)
	if c.sess == nil {
		cwd := s.opts.Workspace
		if who.principal != nil {
			cwd = ""
		}
		if cwd == "" && len(roots) > 0 {
			cwd = roots[0]
		}
		if cwd == "" && !announced {
			cwd = processCwd()
		}
		if cwd != "" {
			cwd = sandboxpolicy.CanonicalPath(cwd)
		}
		if s.tracker != nil {
			c.sess = s.tracker.Start(uuid.NewString(), cwd)
		} else {
			c.sess = session.New(uuid.NewString(), cwd)
		}
		c.principal = who.name
		s.log.Info("session started", zap.String("session", c.sess.ID()), zap.String("cwd", cwd), zap.String("principal", who.name))
		if who.principal != nil {
			if err := s.startPrincipal(c, who.principal); err != nil {
				s.log.Error("recording the principal's modes in the session reported an error", zap.Error(err))
			}
		} else if s.opts.SessionTemp != "" {
			s.startTemp(c, cwd)
		}
	}
	if announced {
		if err := sandboxpolicy.SetRoots(c.sess, roots); err != nil {
			s.log.Error("the session's roots were not recorded", zap.Error(err))
		}
		s.log.Info("workspace roots", zap.String("session", c.sess.ID()), zap.Strings("roots", roots))
	}
	return c.sess, nil
}

// startPrincipal applies p to a new session of c (Principal.Bind): its
// standing mode, the widest mode it may be granted (a ceiling no grant or
// escalation passes), from the server's mode where the principals file
// sets none, and its workspaces as the bounds of its roots; and
// a temp area of its own (sandboxpolicy.NewSessionTemp), so no two
// sessions share one.
func (s *Server) startPrincipal(c *conn, p *principal.Principal) error {
	var (
		serverMode sandbox.Mode
		tempParent string
	)
	if h := s.front.Load(); h != nil {
		serverMode, tempParent = h.opts.Mode, h.opts.TempDir
	}
	if serverMode == "" {
		serverMode = sandbox.ReadOnly
	}
	// The ceiling, the bounds (the roots never leave the workspaces, even
	// through a root swapped for a symlink before it is pinned) and the
	// standing mode.
	if err := p.Bind(c.sess, serverMode); err != nil {
		return err
	}
	var temps []string
	if tempParent != "" {
		dir, err := sandboxpolicy.NewSessionTemp(tempParent, p.Workspaces[0])
		if err != nil {
			// Fail closed: no temp area rather than a shared one.
			s.log.Warn("the session gets no temp area", zap.String("principal", p.Name), zap.Error(err))
		} else {
			c.tempDir, temps = dir, []string{dir.Path}
		}
	}
	return sandboxpolicy.SetTempRoots(c.sess, temps)
}

// startTemp gives c's new session a temp area of its own in
// Options.SessionTemp, owned as its workspace root cwd when the server
// runs as root (sandboxpolicy.NewSessionTemp), in place of the policy's
// temp roots; nothing when Options.SessionTemp lies in the workspace
// itself (nothing is made in the user's tree). Where none can be made the session gets no temp area (fail
// closed: never the shared one it was not meant to have), logged.
func (s *Server) startTemp(c *conn, cwd string) {
	if cwd != "" && dirfd.Beneath(cwd, s.opts.SessionTemp) {
		return // the user's own tree: its temp roots serve as they are
	}
	var temps []string
	dir, err := sandboxpolicy.NewSessionTemp(s.opts.SessionTemp, cwd)
	if err != nil {
		s.log.Warn("the session gets no temp area", zap.String("in", s.opts.SessionTemp), zap.Error(err))
	} else {
		c.tempDir, temps = dir, []string{dir.Path}
		s.log.Info("session temp area", zap.String("session", c.sess.ID()), zap.String("dir", dir.Path))
	}
	if err := sandboxpolicy.SetTempRoots(c.sess, temps); err != nil {
		s.log.Error("the session's temp area was not recorded", zap.Error(err))
	}
}

// errAskRoots says a 2026-07-28 call must ask the client for its roots.
var errAskRoots = errors.New("the roots are asked with an input-required result")

// clientRoots returns the root URIs the client announces and true; false
// when the client declares no roots. On a 2025-11-25 (or earlier)
// connection it sends roots/list and waits up to the roots timeout; on a
// 2026-07-28 one the answer arrives with the retried call (errAskRoots
// until it does).
func (s *Server) clientRoots(ctx context.Context, req *mcp.CallToolRequest, newProto bool) ([]string, bool, error) {
	var res *mcp.ListRootsResult
	if newProto {
		if _, offers := requestCaps(req)["roots"]; !offers {
			return nil, false, nil
		}
		r, ok := req.Params.InputResponses[rootsKey].(*mcp.ListRootsResult)
		if !ok {
			return nil, false, errAskRoots
		}
		res = r
	} else {
		ip := req.Session.InitializeParams()
		if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil {
			return nil, false, nil
		}
		timeout := s.opts.RootsTimeout
		if timeout <= 0 {
			timeout = DefaultRootsTimeout
		}
		s.log.Debug("asking the client for its roots", zap.Duration("timeout", timeout))
		rctx, cancel := context.WithTimeout(ctx, timeout)
		r, err := req.Session.ListRoots(rctx, nil)
		cancel()
		if err != nil {
			return nil, false, err
		}
		res = r
	}
	var uris []string
	if res != nil {
		for _, r := range res.Roots {
			if r != nil {
				uris = append(uris, r.URI)
			}
		}
	}
	return uris, true, nil
}

// usableRoots returns the local paths of the root URIs that may be
// workspace roots, in order: parsed strictly (sandboxpolicy.RootPath), not
// "/" once canonical, an existing directory. Each refused root is logged
// with the reason and grants nothing.
func (s *Server) usableRoots(uris []string) []string {
	var out []string
	for _, uri := range uris {
		p, err := sandboxpolicy.RootPath(uri)
		if err == nil && sandboxpolicy.CanonicalPath(p) == "/" {
			err = errors.New(`it is "/", which would make workspace-write unlimited`)
		}
		if err == nil {
			if info, serr := os.Stat(p); serr != nil || !info.IsDir() {
				err = errors.New("not an existing directory")
			}
		}
		if err != nil {
			s.log.Warn("client root refused", zap.String("uri", uri), zap.String("reason", err.Error()))
			continue
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}
