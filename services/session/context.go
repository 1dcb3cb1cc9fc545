package session

import "context"

// contextKey is the context key of the session a call runs in.
type contextKey struct{}

// NewContext returns ctx carrying s, the session the call made with it runs
// in. A front end (the MCP server, `harness call`) sets it for every tool
// call; the tool families' guard (services/guard) reads it, so the tool
// vocabulary (services/tool) need not know what a session is.
func NewContext(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, contextKey{}, s)
}

// FromContext returns the session ctx carries, nil when it carries none (a
// call with no session: no agent to route an approval through, and the
// deployment's default policy).
func FromContext(ctx context.Context) *Session {
	s, _ := ctx.Value(contextKey{}).(*Session)
	return s
}
