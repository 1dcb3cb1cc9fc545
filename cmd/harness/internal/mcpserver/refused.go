package mcpserver

import (
	"time"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/session"
)

// recordRefused hands the sink the audit record of a call of tool the
// server refused before the tool ran (issue 25: every call leaves one
// record): decision Refused, outcome Error with code (SERVER_BUSY,
// PRINCIPAL_SESSION_LIMIT with no session, or FS_ABORTED for a call
// cancelled while it waited for a slot).
func (s *Server) recordRefused(sess *session.Session, tool, client, principal string, code errcode.Code) {
	if s.opts.Sink == nil {
		return
	}
	r := audit.Record{
		Time: time.Now().UTC(), Client: client, Principal: principal, Tool: tool,
		Decision: audit.Refused, Outcome: audit.Error, Code: string(code),
	}
	if sess != nil {
		r.Session = sess.ID()
	}
	s.opts.Sink.Append(r)
}
