package mcpserver

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

// rootsKey is the input request id of a roots request.
const rootsKey = "roots"

// rootsTimeout bounds the wait for a client's roots: a client that
// advertises roots but never answers falls back to the working directory.
const rootsTimeout = 5 * time.Second

// session returns the connection's session, creating it on the first call:
// its cwd is the configured workspace, else the client's first file:// root
// that is an existing directory, else the process working directory,
// canonicalized once so the fence root it defines is pinned. For a
// 2026-07-28 client that offers roots, the first call returns an
// input-required result asking for them; ask is then non-nil.
func (s *Server) session(ctx context.Context, c *conn, req *mcp.CallToolRequest, newProto bool) (sess *session.Session, ask *mcp.CallToolResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		return c.sess, nil
	}
	cwd := s.opts.Workspace
	if cwd == "" {
		var roots *mcp.ListRootsResult
		if newProto {
			if _, offers := requestCaps(req)["roots"]; offers {
				r, ok := req.Params.InputResponses[rootsKey].(*mcp.ListRootsResult)
				if !ok {
					return nil, &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{rootsKey: &mcp.ListRootsParams{}}}
				}
				roots = r
			}
		} else {
			rctx, cancel := context.WithTimeout(ctx, rootsTimeout)
			r, err := req.Session.ListRoots(rctx, nil)
			cancel()
			if err != nil {
				s.log.Debug("client offers no roots", zap.Error(err))
			}
			roots = r
		}
		cwd = firstRoot(roots)
	}
	if cwd == "" {
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
	s.log.Info("session started", zap.String("session", c.sess.ID()), zap.String("cwd", cwd))
	return c.sess, nil
}

// firstRoot returns the path of the first file:// root that is an existing
// directory, "" when there is none.
func firstRoot(r *mcp.ListRootsResult) string {
	if r == nil {
		return ""
	}
	for _, root := range r.Roots {
		u, err := url.Parse(root.URI)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
			continue
		}
		if info, err := os.Stat(u.Path); err == nil && info.IsDir() {
			return filepath.Clean(u.Path)
		}
	}
	return ""
}
