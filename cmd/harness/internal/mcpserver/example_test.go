package mcpserver_test

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
)

// New builds a server without fx: here over one tool that reports the
// session's working directory, served to an MCP client over the SDK's
// in-memory transports (a process serving stdio passes a StdioTransport to
// Run instead).
func ExampleNew() {
	cwd := &tool.Tool{
		Name:         "cwd",
		Description:  "Report the session's working directory.",
		InputSchema:  &jsonschema.Schema{Type: "object"},
		OutputSchema: &jsonschema.Schema{Type: "object"},
		Annotations:  tool.Annotations{ReadOnly: true, Idempotent: true},
		Handler: func(ctx context.Context, _ tool.Call) tool.Result {
			cwd := session.FromContext(ctx).Cwd()
			return tool.Result{Text: cwd, Value: map[string]any{"cwd": cwd}}
		},
	}
	srv, err := mcpserver.New(mcpserver.Options{Version: "v1", Workspace: "/srv/project"}, []*tool.Tool{cwd}, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx, serverSide) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, clientSide, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	init := cs.InitializeResult()
	fmt.Println(init.ServerInfo.Name, init.ServerInfo.Version)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cwd", Arguments: map[string]any{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text, res.StructuredContent)

	_ = cs.Close() // the client leaves: Run returns
	fmt.Println("served:", <-served)

	_, err = mcpserver.New(mcpserver.Options{}, []*tool.Tool{cwd, cwd}, nil, nil)
	fmt.Println(err)
	// Output:
	// harness v1
	// /srv/project map[cwd:/srv/project]
	// served: <nil>
	// mcpserver: two tools are named "cwd"
}
