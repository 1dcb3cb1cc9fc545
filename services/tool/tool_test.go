package tool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/services/tool"
)

func TestErrorResult(t *testing.T) {
	r := tool.ErrorResult("cannot read \"a\": not found", "FS_NOT_FOUND")
	assert.Equal(t, tool.Result{Text: "Error: cannot read \"a\": not found", IsError: true, Code: "FS_NOT_FOUND"}, r)
}

func TestGroupCollectsToolsSortedByName(t *testing.T) {
	mk := func(name string) func() *tool.Tool {
		return func() *tool.Tool {
			return &tool.Tool{Name: name, Handler: func(context.Context, tool.Call) tool.Result { return tool.Result{Text: name} }}
		}
	}
	var g tool.Group
	app := fxtest.New(t,
		fx.Provide(fx.Annotate(mk("write"), fx.ResultTags(`group:"tools"`)), fx.Annotate(mk("read"), fx.ResultTags(`group:"tools"`)), fx.Annotate(mk("edit"), fx.ResultTags(`group:"tools"`))),
		fx.Populate(&g),
	)
	app.RequireStart().RequireStop()
	require.Len(t, g.Tools, 3)
	var names []string
	for _, tl := range tool.Sorted(g.Tools) {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"edit", "read", "write"}, names)
}
