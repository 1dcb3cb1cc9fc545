package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// MCP logging (protocol 2025-11-25 and earlier; deprecated from 2026-07-28,
// whose sessions set no level and so receive no records): a client sets its
// level with logging/setLevel, and from then on the process's zap records
// at that level or above reach it as notifications/message. Before
// setLevel nothing is sent (the SDK's reading of the spec). Logs on stderr
// are not affected.

// mcpLevels are the levels logging/setLevel accepts, least severe first
// (RFC 5424 severities, as MCP names them).
var mcpLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// zapThreshold is the least severe zap level a client at level l receives:
// zap has no notice, so notice starts at warn; critical, alert and
// emergency are dpanic, panic and fatal.
func zapThreshold(l mcp.LoggingLevel) zapcore.Level {
	switch l {
	case "debug":
		return zapcore.DebugLevel
	case "info":
		return zapcore.InfoLevel
	case "notice", "warning":
		return zapcore.WarnLevel
	case "error":
		return zapcore.ErrorLevel
	case "critical":
		return zapcore.DPanicLevel
	case "alert":
		return zapcore.PanicLevel
	}
	return zapcore.FatalLevel
}

// mcpLevel is the level of a zap record's notification.
func mcpLevel(l zapcore.Level) mcp.LoggingLevel {
	switch {
	case l <= zapcore.DebugLevel:
		return "debug"
	case l == zapcore.InfoLevel:
		return "info"
	case l == zapcore.WarnLevel:
		return "warning"
	case l == zapcore.ErrorLevel:
		return "error"
	case l == zapcore.DPanicLevel:
		return "critical"
	case l == zapcore.PanicLevel:
		return "alert"
	}
	return "emergency"
}

// clientLogs are the sessions that set a log level, with the threshold each
// asked for; it is a zapcore.Core forwarding records to them.
type clientLogs struct {
	mu       sync.RWMutex
	sessions map[*mcp.ServerSession]zapcore.Level
	// min is the lowest threshold among the sessions, above FatalLevel when
	// there is none, so that Enabled costs one atomic load.
	min atomic.Int32
}

func newClientLogs() *clientLogs {
	l := &clientLogs{sessions: map[*mcp.ServerSession]zapcore.Level{}}
	l.min.Store(int32(zapcore.FatalLevel + 1))
	return l
}

// set records that ss asked for level; the session is forgotten when it
// ends.
func (l *clientLogs) set(ss *mcp.ServerSession, level mcp.LoggingLevel) {
	l.mu.Lock()
	_, known := l.sessions[ss]
	l.sessions[ss] = zapThreshold(level)
	l.updateMin()
	l.mu.Unlock()
	if !known {
		go func() {
			_ = ss.Wait()
			l.mu.Lock()
			delete(l.sessions, ss)
			l.updateMin()
			l.mu.Unlock()
		}()
	}
}

// updateMin recomputes min; l.mu is held.
func (l *clientLogs) updateMin() {
	least := zapcore.FatalLevel + 1
	for _, t := range l.sessions {
		least = min(least, t)
	}
	l.min.Store(int32(least))
}

// core is the zap core forwarding to the sessions, with fields added by
// zap.Logger.With.
func (l *clientLogs) core() zapcore.Core { return &clientCore{logs: l} }

// tee returns log with its records also forwarded to the sessions.
func (l *clientLogs) tee(log *zap.Logger) *zap.Logger {
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return teeCore{Core: zapcore.NewTee(c, l.core()), logs: l}
	}))
}

// forwardedTo returns the clientLogs log's records are forwarded to (log is,
// or is derived by Named or With from, a logger tee returned), nil when
// there are none.
func forwardedTo(log *zap.Logger) *clientLogs {
	if t, ok := log.Core().(teeCore); ok {
		return t.logs
	}
	return nil
}

// teeCore is the core of a logger tee returned: the original core and the
// sessions' together, remembering which sessions.
type teeCore struct {
	zapcore.Core
	logs *clientLogs
}

func (t teeCore) With(fields []zapcore.Field) zapcore.Core {
	return teeCore{Core: t.Core.With(fields), logs: t.logs}
}

// clientCore is the zapcore.Core of clientLogs.
type clientCore struct {
	logs   *clientLogs
	fields []zapcore.Field
}

func (c *clientCore) Enabled(level zapcore.Level) bool {
	return int32(level) >= c.logs.min.Load()
}

func (c *clientCore) With(fields []zapcore.Field) zapcore.Core {
	return &clientCore{logs: c.logs, fields: append(slices.Clip(c.fields), fields...)}
}

func (c *clientCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write sends the record to every session whose threshold it meets, as
// notifications/message whose data is an object: "msg" the message, and
// the record's fields. A session that can no longer be written to is
// skipped.
func (c *clientCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	data := maps.Clone(enc.Fields)
	data["msg"] = e.Message
	params := &mcp.LoggingMessageParams{Level: mcpLevel(e.Level), Logger: e.LoggerName, Data: data}
	c.logs.mu.RLock()
	var to []*mcp.ServerSession
	for ss, t := range c.logs.sessions {
		if e.Level >= t {
			to = append(to, ss)
		}
	}
	c.logs.mu.RUnlock()
	for _, ss := range to {
		_ = ss.Log(context.Background(), params) // a closed session receives nothing
	}
	return nil
}

func (c *clientCore) Sync() error { return nil }

// validateSetLevel is the receiving middleware that checks
// logging/setLevel's level (an unknown one is -32602 invalid params, and
// the session's level is unchanged) and records the session's level for
// clientLogs.
func (s *Server) validateSetLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "logging/setLevel" {
			return next(ctx, method, req)
		}
		p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
		if p == nil || !slices.Contains(mcpLevels, p.Level) {
			level := mcp.LoggingLevel("")
			if p != nil {
				level = p.Level
			}
			names := make([]string, len(mcpLevels))
			for i, l := range mcpLevels {
				names[i] = string(l)
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown log level %q: the levels are %s", level, strings.Join(names, ", "))}
		}
		res, err := next(ctx, method, req)
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && err == nil {
			s.logs.set(ss, p.Level)
		}
		return res, err
	}
}
