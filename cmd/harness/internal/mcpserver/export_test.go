package mcpserver

import (
	"go.uber.org/zap"

	"github.com/dsh-go/harness/services/tool"
)

// New builds the MCP server over tools (sorted by name). The records of
// log, the server's own, also reach the clients that set a log level (with
// Module, every record of the process does).
func New(opts Options, tools []*tool.Tool, log *zap.Logger) *Server {
	logs := newClientLogs()
	if log == nil {
		log = zap.NewNop()
	}
	return build(opts, tools, logs.tee(log), logs)
}
