//go:build linux

package toolfs_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// TestRegistration pins the tool set (T-01: read, write, edit, plus list,
// glob and grep, additions of this port) and the execution modes (T-02).
func TestRegistration(t *testing.T) {
	tools := rdTools(t, toolfs.Config{}, rdLocal(t, rdDir(t)))
	all := tools.All()
	names := make([]string, 0, len(all))
	for _, tl := range all {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"delete", "edit", "glob", "grep", "list", "mkdir", "move", "read", "write"}, names, "T-01: exactly these, ordered by name")

	cases := []struct {
		name     string
		tool     *tool.Tool
		wantName string
		// The annotations: readOnlyHint, destructiveHint (may replace or
		// remove what is there), idempotentHint (a repeat changes nothing
		// more).
		readOnly, destructive, idempotent bool
	}{
		{name: "T-02 read is parallel and read-only", tool: tools.Read(), wantName: "read", readOnly: true, idempotent: true},
		{name: "T-02 list is parallel and read-only", tool: tools.List(), wantName: "list", readOnly: true, idempotent: true},
		{name: "glob is parallel and read-only", tool: tools.Glob(), wantName: "glob", readOnly: true, idempotent: true},
		{name: "grep is parallel and read-only", tool: tools.Grep(), wantName: "grep", readOnly: true, idempotent: true},
		{name: "T-02 write mutates, replaces, the same content twice is one", tool: tools.Write(), wantName: "write", destructive: true, idempotent: true},
		{name: "T-02 edit mutates, replaces, a repeat edits again", tool: tools.Edit(), wantName: "edit", destructive: true},
		{name: "mkdir mutates, only adds, a repeat finds it there", tool: tools.Mkdir(), wantName: "mkdir", idempotent: true},
		{name: "delete mutates, removes, a repeat removes nothing more", tool: tools.Delete(), wantName: "delete", destructive: true, idempotent: true},
		{name: "move mutates, may replace with overwrite, a repeat is another move", tool: tools.Move(), wantName: "move", destructive: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantName, tc.tool.Name)
			assert.Equal(t, tool.Annotations{ReadOnly: tc.readOnly, Destructive: tc.destructive, Idempotent: tc.idempotent}, tc.tool.Annotations)
			assert.NotNil(t, tc.tool.Handler)
			assert.NotNil(t, tc.tool.InputSchema)
			assert.NotNil(t, tc.tool.OutputSchema)
		})
	}
}

// TestReadSchema pins the read tool's model-facing schema (spec section 1)
// and the configured limit in its text (T-06).
func TestReadSchema(t *testing.T) {
	cases := []struct {
		name      string
		cfg       toolfs.Config
		wantLimit string
		wantMax   int
	}{
		{name: "section 1 default limit", wantLimit: "Maximum number of lines to return. Defaults to 2000.", wantMax: 2000},
		{name: "T-06 ReadLimit 2", cfg: toolfs.Config{ReadLimit: 2}, wantLimit: "Maximum number of lines to return. Defaults to 2.", wantMax: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			read := rdTools(t, tc.cfg, rdLocal(t, rdDir(t))).Read()
			assert.Equal(t, "Read a UTF-8 text file and return line-numbered content.", read.Description)
			s := read.InputSchema
			assert.Equal(t, "object", s.Type)
			assert.Equal(t, []string{"file_path"}, s.Required)
			assert.Equal(t, &jsonschema.Schema{Not: &jsonschema.Schema{}}, s.AdditionalProperties, "issue 21: additionalProperties is false")
			require.Len(t, s.Properties, 3)
			assert.Equal(t, "string", s.Properties["file_path"].Type)
			assert.Equal(t, "Path to read, resolved by the filesystem backend.", s.Properties["file_path"].Description)
			assert.Equal(t, "integer", s.Properties["offset"].Type)
			assert.Equal(t, "1-based first line to return. Defaults to 1.", s.Properties["offset"].Description)
			assert.Equal(t, "integer", s.Properties["limit"].Type)
			assert.Equal(t, tc.wantLimit, s.Properties["limit"].Description)
			assert.Equal(t, jsonschema.Ptr(float64(tc.wantMax)), s.Properties["limit"].Maximum, "issue 21: the enforced bound is declared")

			raw, err := json.Marshal(s)
			require.NoError(t, err)
			assert.Contains(t, string(raw), strings.TrimPrefix(tc.wantLimit, "Maximum number of lines to return. "))
		})
	}
}

// TestListSchema pins the list tool's schema and its configured limit.
func TestListSchema(t *testing.T) {
	for _, tc := range []struct {
		cfg  toolfs.Config
		want string
	}{
		{want: "Defaults to 1000."},
		{cfg: toolfs.Config{ListLimit: 7}, want: "Defaults to 7."},
	} {
		t.Run(tc.want, func(t *testing.T) {
			list := rdTools(t, tc.cfg, rdLocal(t, rdDir(t))).List()
			s := list.InputSchema
			assert.Equal(t, "object", s.Type)
			assert.Empty(t, s.Required, "path is optional")
			assert.Equal(t, "string", s.Properties["path"].Type)
			assert.Equal(t, "integer", s.Properties["offset"].Type)
			assert.Equal(t, "integer", s.Properties["limit"].Type)
			assert.True(t, strings.HasSuffix(s.Properties["limit"].Description, tc.want), s.Properties["limit"].Description)
		})
	}
}

// TestConfigValidate_T10_NegativeFailsZeroDefaults is T-10 adapted to Go:
// the Go types rule out NaN and fractions, a negative value fails toolfs.New
// with `toolfs: <Field> must be a positive integer`, and zero means the
// default.
func TestConfigValidate_T10_NegativeFailsZeroDefaults(t *testing.T) {
	cases := []struct {
		name  string
		cfg   toolfs.Config
		field string
	}{
		{name: "T-10 ReadLimit -1", cfg: toolfs.Config{ReadLimit: -1}, field: "ReadLimit"},
		{name: "T-10 ReadMaxLineLength -1", cfg: toolfs.Config{ReadMaxLineLength: -1}, field: "ReadMaxLineLength"},
		{name: "T-10 ReadMaxBytes -1", cfg: toolfs.Config{ReadMaxBytes: -1}, field: "ReadMaxBytes"},
		{name: "T-10 ReadStreamMinSize -1", cfg: toolfs.Config{ReadStreamMinSize: -1}, field: "ReadStreamMinSize"},
		{name: "T-10 ListLimit -1", cfg: toolfs.Config{ListLimit: -1}, field: "ListLimit"},
		{name: "ResultTextMaxBytes -1", cfg: toolfs.Config{ResultTextMaxBytes: -1}, field: "ResultTextMaxBytes"},
		{name: "T-10 ReadLimit very negative", cfg: toolfs.Config{ReadLimit: -1 << 40}, field: "ReadLimit"},
		{name: "T-10 first bad field is named", cfg: toolfs.Config{ReadMaxBytes: -2, ListLimit: -3}, field: "ReadMaxBytes"},
	}
	fsys := rdLocal(t, rdDir(t))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tools, err := toolfs.New(tc.cfg, toolfs.Deps{FS: fsys})
			require.Error(t, err)
			assert.Nil(t, tools)
			assert.True(t, strings.HasPrefix(err.Error(), "toolfs: "+tc.field+" must be a positive integer"), err.Error())
			_, err = tc.cfg.Validate()
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "toolfs: "+tc.field+" must be a positive integer"), err.Error())
		})
	}

	t.Run("T-10 zero means the default", func(t *testing.T) {
		got, err := toolfs.Config{}.Validate()
		require.NoError(t, err)
		assert.Equal(t, toolfs.Config{
			ReadLimit:          2000,
			ReadMaxLineLength:  2000,
			ReadMaxBytes:       51200,
			ReadStreamMinSize:  10485760,
			ListLimit:          1000,
			WriteMaxBytes:      16 << 20,
			ReadImageMaxBytes:  5 << 20,
			ResultTextMaxBytes: 512,
		}, got)
	})
	t.Run("T-10 positive values are kept", func(t *testing.T) {
		in := toolfs.Config{ReadLimit: 1, ReadMaxLineLength: 2, ReadMaxBytes: 3, ReadStreamMinSize: 4, ListLimit: 5, WriteMaxBytes: 6, ReadImageMaxBytes: 7, ResultTextMaxBytes: 8}
		got, err := in.Validate()
		require.NoError(t, err)
		assert.Equal(t, in, got)
	})
	t.Run("T-10 zero default line length applies", func(t *testing.T) {
		dir := rdDir(t)
		p := rdFile(t, dir, "a.txt", strings.Repeat("q", 2001))
		res := rdCall(t, rdTools(t, toolfs.Config{ReadMaxLineLength: 0}, rdLocal(t, dir)).Read(), nil, `{"file_path":"a.txt"}`)
		require.False(t, res.IsError, res.Text)
		assert.Equal(t, rdEnvelope(p, "1: "+strings.Repeat("q", 2000)+"... (line truncated to 2000 chars)\n\n(End of file - total 1 lines)"), res.Text)
	})
	t.Run("T-10 a fraction does not decode into Config", func(t *testing.T) {
		var cfg toolfs.Config
		require.Error(t, json.Unmarshal([]byte(`{"readLimit":2.5}`), &cfg))
	})
	t.Run("T-10 JSON keys match the spec's names", func(t *testing.T) {
		var cfg toolfs.Config
		require.NoError(t, json.Unmarshal([]byte(`{"readLimit":2,"readMaxLineLength":3,"readMaxBytes":4,"readStreamMinSize":5,"listLimit":6}`), &cfg))
		assert.Equal(t, toolfs.Config{ReadLimit: 2, ReadMaxLineLength: 3, ReadMaxBytes: 4, ReadStreamMinSize: 5, ListLimit: 6}, cfg)
	})
}

// TestModuleFailsOnBadConfig: with fx, a bad Config fails the app at
// construction even when nothing collects the tools yet (T-10).
func TestModuleFailsOnBadConfig(t *testing.T) {
	app := fx.New(
		fx.NopLogger,
		fx.Supply(fslocal.Config{Cwd: rdDir(t)}),
		fslocal.Module,
		fx.Supply(toolfs.Config{ReadMaxBytes: -1}),
		toolfs.Module,
	)
	require.Error(t, app.Err())
	assert.Contains(t, app.Err().Error(), "toolfs: ReadMaxBytes must be a positive integer")
}

// TestNewRequiresFS: a nil fs.Service fails construction.
func TestNewRequiresFS(t *testing.T) {
	_, err := toolfs.New(toolfs.Config{}, toolfs.Deps{})
	require.Error(t, err)
}

// TestReadNoSessionNoObserver: a read works with neither a session nor any
// observer (T-12).
func TestReadNoSessionNoObserver(t *testing.T) {
	dir := rdDir(t)
	p := rdFile(t, dir, "a.txt", "x\n")
	tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: rdLocal(t, dir)})
	require.NoError(t, err)
	for _, sess := range []*session.Session{nil, session.New("s", "")} {
		res := rdCall(t, tools.Read(), sess, `{"file_path":"a.txt"}`)
		require.False(t, res.IsError, res.Text)
		assert.Equal(t, rdEnvelope(p, "1: x\n\n(End of file - total 1 lines)"), res.Text)
	}
}

// TestWholeNumberArguments is issue 14 item 8: every whole-number argument
// (offset and limit of read and list) is declared "integer" with minimum 1,
// and on the wire 1.5 is refused with INVALID_ARGUMENT while 2 works.
func TestWholeNumberArguments(t *testing.T) {
	dir := rdDir(t)
	rdFile(t, dir, "a.txt", "one\ntwo\nthree")
	rdFile(t, dir, "b.txt", "")
	rdFile(t, dir, "c.txt", "")
	tools := rdTools(t, toolfs.Config{}, rdLocal(t, dir))
	all := map[string]*tool.Tool{"read": tools.Read(), "list": tools.List(), "write": tools.Write(), "edit": tools.Edit()}
	whole := map[string][]string{"read": {"offset", "limit"}, "list": {"offset", "limit"}}
	for name, tl := range all {
		for prop, s := range tl.InputSchema.Properties {
			if slices.Contains(whole[name], prop) {
				assert.Equal(t, "integer", s.Type, "%s.%s", name, prop)
				require.NotNil(t, s.Minimum, "%s.%s", name, prop)
				assert.InDelta(t, 1.0, *s.Minimum, 0, "%s.%s", name, prop)
				continue
			}
			assert.NotEqual(t, "number", s.Type, "%s.%s: no fractional argument exists", name, prop)
		}
	}
	cases := []struct {
		tool, args string
		wantErr    string
	}{
		{tool: "read", args: `{"file_path":"a.txt","offset":1.5}`, wantErr: "Error: offset must be a positive integer"},
		{tool: "read", args: `{"file_path":"a.txt","limit":1.5}`, wantErr: "Error: limit must be a positive integer"},
		{tool: "list", args: `{"offset":1.5}`, wantErr: "Error: offset must be a positive integer"},
		{tool: "list", args: `{"limit":1.5}`, wantErr: "Error: limit must be a positive integer"},
		{tool: "read", args: `{"file_path":"a.txt","offset":2}`},
		{tool: "read", args: `{"file_path":"a.txt","limit":2}`},
		{tool: "list", args: `{"offset":2}`},
		{tool: "list", args: `{"limit":2}`},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			res := rdCall(t, all[tc.tool], session.New("s1", dir), tc.args)
			if tc.wantErr == "" {
				require.False(t, res.IsError, res.Text)
				assert.Empty(t, res.Code)
				return
			}
			assert.True(t, res.IsError)
			assert.Equal(t, tc.wantErr, res.Text)
			assert.EqualValues(t, errcode.InvalidArgument, res.Code)
		})
	}
}
