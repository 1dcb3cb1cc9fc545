package mcpserver_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/tool"
)

// logClient connects a 2025-11-25 client to srv that sets its log level to
// info, and returns its session and the messages of the records it
// receives.
func logClient(t *testing.T, srv *mcpserver.Server) (*mcp.ClientSession, func() []string) {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	var (
		mu   sync.Mutex
		msgs []string
	)
	client := mcp.NewClient(&mcp.Implementation{Name: "logs", Version: "v0"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { //nolint:staticcheck // SEP-2577: logging is served to 2025-11-25 clients
			data, _ := req.Params.Data.(map[string]any)
			msg, _ := data["msg"].(string)
			mu.Lock()
			msgs = append(msgs, msg)
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	require.NoError(t, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"})) //nolint:staticcheck // SEP-2577: see above
	return cs, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), msgs...)
	}
}

// TestModuleForwardsEveryRecord: under Module, a record of any part of the
// application reaches a client that set a log level, not only the server's
// own (New finds the sessions in Module's decorated logger).
func TestModuleForwardsEveryRecord(t *testing.T) {
	var (
		srv *mcpserver.Server
		log *zap.Logger
	)
	app := fxtest.New(t,
		fx.Supply(mcpserver.Options{Version: "test"}),
		fx.Provide(
			zap.NewNop,
			fx.Annotate(func() *tool.Tool { return quick }, fx.ResultTags(`group:"tools"`)),
		),
		mcpserver.Module,
		fx.Populate(&srv, &log),
	)
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	_, received := logClient(t, srv)
	log.Named("elsewhere").Info("a record of another module")
	assert.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{"a record of another module"}, received()) },
		5*time.Second, 10*time.Millisecond, "got %q", received())
}

// TestNewForwardsItsOwnRecords: without fx, the records of the logger given
// to New (here "session started", at the first call) reach a client that set
// a log level.
func TestNewForwardsItsOwnRecords(t *testing.T) {
	srv, err := mcpserver.New(mcpserver.Options{Version: "test", Workspace: t.TempDir()}, []*tool.Tool{quick}, zap.NewNop(), nil)
	require.NoError(t, err)
	cs, received := logClient(t, srv)
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "quick", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return slices.Contains(received(), "session started") },
		5*time.Second, 10*time.Millisecond, "got %q", received())
}
