package guard

import (
	"context"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dsh-go/harness/services/audit"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// open starts the audit record of a call of the tool named name in sess
// (nil: a call with no session), now.
func (g *Guard) open(sess *session.Session, name string, call tool.Call) (*audit.Entry, time.Time) {
	start := time.Now()
	r := audit.Record{Time: start, Tool: name, Call: call.ID, Client: call.Client, Principal: call.Principal}
	if sess != nil {
		r.Session = sess.ID()
	}
	return audit.Open(r), start
}

// admit asks the sink, when it is an audit.Admitter, whether the call
// opened as rec may run; when not, it returns the refusal, with the
// code audit.CodeSessionBudget, and true.
func (g *Guard) admit(rec *audit.Entry) (tool.Result, bool) {
	a, ok := g.sink.(audit.Admitter)
	if !ok {
		return tool.Result{}, false
	}
	err := a.Admit(rec.Record())
	if err == nil {
		return tool.Result{}, false
	}
	return tool.ErrorResult(err.Error(), audit.CodeSessionBudget), true
}

// close ends the record of a call that returned res: the outcome and its
// code, the decision the result shows (a result with a denial marker was
// Denied; an INVALID_ARGUMENT result of a call that asked no escalation
// was Invalid; an escalation already said Approved or Declined), the
// duration since start. It hands the record to the sink and the log.
func (g *Guard) close(rec *audit.Entry, start time.Time, res tool.Result) {
	rec.Update(func(r *audit.Record) {
		r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		r.Outcome = audit.OK
		if res.IsError {
			r.Outcome, r.Code = audit.Error, string(res.Code)
		}
		switch {
		case res.Marker != "":
			r.Decision, r.Marker = audit.Denied, res.Marker
		case res.Code == errcode.InvalidArgument && r.Decision == audit.Allowed:
			r.Decision = audit.Invalid
		}
	})
	r := rec.Record()
	if g.sink != nil {
		g.sink.Append(r)
	}
	g.logRecord(r)
}

// logRecord writes r to the log as one line with the record's fields: at
// info for a denial or an escalation, at debug otherwise.
func (g *Guard) logRecord(r audit.Record) {
	level := zapcore.DebugLevel
	if r.Decision == audit.Denied || r.Escalation != nil {
		level = zapcore.InfoLevel
	}
	ce := g.log.Check(level, "call")
	if ce == nil {
		return
	}
	fields := []zap.Field{
		zap.Time("time", r.Time), zap.String("session", r.Session), zap.String("client", r.Client), zap.String("principal", r.Principal),
		zap.String("tool", r.Tool), zap.String("call", r.Call), zap.String("mode", r.Mode),
		zap.Strings("paths", r.Paths), zap.String("decision", string(r.Decision)),
	}
	if r.Marker != "" {
		fields = append(fields, zap.String("marker", r.Marker))
	}
	if r.Escalation != nil {
		fields = append(fields, zap.Any("escalation", r.Escalation))
	}
	fields = append(fields, zap.String("outcome", string(r.Outcome)))
	if r.Code != "" {
		fields = append(fields, zap.String("code", r.Code))
	}
	if r.Bytes != 0 {
		fields = append(fields, zap.Int64("bytes", r.Bytes))
	}
	if len(r.Changes) > 0 {
		fields = append(fields, zap.Any("changes", r.Changes))
	}
	if r.Command != nil {
		fields = append(fields, zap.Any("command", r.Command))
	}
	ce.Write(append(fields, zap.Float64("duration_ms", r.DurationMS))...)
}

// answers is the approver of one escalation: it asks the approver it
// wraps and keeps the outcome for the call's record.
type answers struct {
	approver sandbox.Approver
	outcome  sandbox.Outcome
}

// Approve asks the wrapped approver and keeps its outcome.
func (a *answers) Approve(ctx context.Context, ar sandbox.ApprovalRequest) (sandbox.Outcome, error) {
	out, err := a.approver.Approve(ctx, ar)
	if err == nil {
		a.outcome = out
	}
	return out, err
}

// asker returns the approver of the call's escalation (the call's own,
// else the composed one; only the composed one when it is a
// sandbox.Unattended) wrapped to keep the answer; nil when there is none,
// and then the approver passed on is nil too.
func (c *Call) asker() (sandbox.Approver, *answers) {
	approver := c.Approver
	if approver == nil || c.g.unattended != nil {
		approver = c.g.approver
	}
	if approver == nil {
		return nil, nil
	}
	a := &answers{approver: approver}
	return a, a
}

// recordEscalation records the escalation the call asked for (what, with
// the model's justification as a prompt shows it) and its answer: the
// approver's outcome, "unavailable" when there was no approver, "" when
// none came (the escalation was refused before anyone was asked, or the
// approver failed: the record's code says which). err nil means the call
// was allowed, for the session when session is set; the decision is then
// Approved, else Declined.
func (c *Call) recordEscalation(what, justification string, ans *answers, err error, forSession bool) {
	answer := sandbox.Unavailable
	if ans != nil {
		answer = ans.outcome
	}
	esc := &audit.Escalation{What: what, Justification: sandboxpolicy.CleanJustification(justification), Answer: string(answer)}
	decision := audit.Declined
	if err == nil {
		decision, esc.Scope = audit.Approved, "once"
		if forSession {
			esc.Scope = "session"
		}
	}
	c.rec.Update(func(r *audit.Record) { r.Escalation, r.Decision = esc, decision })
}
