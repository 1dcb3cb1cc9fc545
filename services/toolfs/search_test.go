//go:build linux

package toolfs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

// srBackends returns the tool set over each backend, both with ws as the
// working directory (fssandbox in workspace-write with ws as its workspace
// root): a search reads, so both must answer alike.
func srBackends(t *testing.T, ws string, cfg toolfs.Config) map[string]*toolfs.Tools {
	t.Helper()
	local, err := fslocal.New(fslocal.Config{Cwd: ws}, nil)
	require.NoError(t, err)
	policy, err := sandboxpolicy.New(*wrSandboxCfg(sandbox.WorkspaceWrite, ws))
	require.NoError(t, err)
	sb, err := fssandbox.New(policy, fslocal.Config{Cwd: ws}, fssandbox.Config{}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, sb.Close()) })
	out := map[string]*toolfs.Tools{}
	for name, deps := range map[string]toolfs.Deps{
		"fslocal":   {FS: local},
		"fssandbox": {FS: sb, Policy: policy},
	} {
		tools, err := toolfs.New(cfg, deps)
		require.NoError(t, err)
		out[name] = tools
	}
	return out
}

// srTouch sets the modification time of each regular file among specs to
// base minus i hours, i its index: the files are newest first in specs order.
func srTouch(t *testing.T, root string, specs []string) {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range specs {
		name, _, _ := strings.Cut(s, ": ")
		if strings.Contains(s, " => ") {
			continue
		}
		p := filepath.Join(root, name)
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			mt := base.Add(-time.Duration(i) * time.Hour)
			require.NoError(t, os.Chtimes(p, mt, mt))
		}
	}
}

// srResult checks a search call: on success its text (WS replaced by the
// workspace) and that its value conforms to the tool's output schema; on
// failure its text and code.
func srResult(t *testing.T, tl *tool.Tool, res tool.Result, ws, wantText string, wantCode errcode.Code) {
	t.Helper()
	assert.Equal(t, strings.ReplaceAll(wantText, "WS", ws), res.Text)
	if wantCode != "" {
		assert.True(t, res.IsError)
		assert.EqualValues(t, wantCode, res.Code)
		return
	}
	require.False(t, res.IsError, res.Text)
	wrConforms(t, tl.OutputSchema, res.Value)
}

// srLoops are symlinks that would make a walk that follows links loop or
// leave the tree: none is ever followed.
var srLoops = []string{"loop => .", "a/up => ..", "out => /"}

func TestGlob(t *testing.T) {
	specs := []string{
		"main.go: package main\n",
		"a/x.go: package a\n",
		"a/b/y.go: package b\n",
		"notes.md: notes\n",
		"vendor/v.go: package v\n",
		".hidden/h.go: package h\n",
		".gitignore: vendor/\n",
		"ctl\x01name.txt: c\n",
		"link.go => main.go",
	}
	ws := filepath.Join(rdDir(t), "ws")
	fixture.Build(t, ws, append(specs, srLoops...)...)
	srTouch(t, ws, specs)
	const capNote = "Narrow the pattern or the path, or raise limit (at most 1000).)"
	cases := []struct {
		name  string
		args  string
		files []string     // the value's paths, newest first
		text  string       // the whole text, WS for the workspace
		code  errcode.Code // the code of a failure
	}{
		{
			name: "newest first; ignored, hidden and symlinked files left out", args: `{"pattern":"**/*.go"}`,
			files: []string{"main.go", "a/x.go", "a/b/y.go"},
			text:  "<path>WS</path>\n<files>\nmain.go\na/x.go\na/b/y.go\n\n(3 matching files, newest first.)\n</files>",
		},
		{
			name: "gitignored files shown with no_ignore", args: `{"pattern":"**/*.go","no_ignore":true}`,
			files: []string{"main.go", "a/x.go", "a/b/y.go", "vendor/v.go"},
		},
		{
			name: "hidden files shown with include_hidden", args: `{"pattern":"**/*.go","include_hidden":true}`,
			files: []string{"main.go", "a/x.go", "a/b/y.go", ".hidden/h.go"},
		},
		{
			name: "capped with a note", args: `{"pattern":"**/*.go","limit":2}`,
			files: []string{"main.go", "a/x.go"},
			text:  "<path>WS</path>\n<files>\nmain.go\na/x.go\n\n(Showing the 2 newest of 3 matching files. " + capNote + "\n</files>",
		},
		{
			name: "a base directory; paths relative to it", args: `{"pattern":"**/*.go","path":"a"}`,
			files: []string{"x.go", "b/y.go"},
			text:  "<path>WS/a</path>\n<files>\nx.go\nb/y.go\n\n(2 matching files, newest first.)\n</files>",
		},
		{name: "a name pattern matches at any depth", args: `{"pattern":"y.go"}`, files: []string{"a/b/y.go"}},
		{
			name: "a control character in a name is shown as a JSON string", args: `{"pattern":"ctl*"}`,
			files: []string{"ctl\x01name.txt"},
			text:  "<path>WS</path>\n<files>\n\"ctl\\u0001name.txt\"\n\n(1 matching file, newest first.)\n</files>",
		},
		{
			name: "no match", args: `{"pattern":"**/*.rs"}`, files: []string{},
			text: "<path>WS</path>\n<files>\n(No files match.)\n</files>",
		},
		{
			name: "a .. element is refused", args: `{"pattern":"../*"}`,
			text: `Error: invalid glob pattern "../*": the pattern must not contain . or .. elements`, code: errcode.InvalidArgument,
		},
		{
			name: "a .. element inside is refused", args: `{"pattern":"a/../../etc/*"}`,
			text: `Error: invalid glob pattern "a/../../etc/*": the pattern must not contain . or .. elements`, code: errcode.InvalidArgument,
		},
		{
			name: "an absolute pattern is refused", args: `{"pattern":"/etc/*"}`,
			text: `Error: invalid glob pattern "/etc/*": the pattern must be a non-empty relative path`, code: errcode.InvalidArgument,
		},
		{
			name: "a malformed pattern is refused", args: `{"pattern":"a/{b"}`,
			text: `Error: invalid glob pattern "a/{b": syntax error in pattern`, code: errcode.InvalidArgument,
		},
		{name: "pattern is required", args: `{}`, text: "Error: pattern must be a non-empty string", code: errcode.InvalidArgument},
		{name: "limit is capped", args: `{"pattern":"*","limit":1001}`, text: "Error: limit must be less than or equal to 1000", code: errcode.InvalidArgument},
		{name: "limit is a positive integer", args: `{"pattern":"*","limit":0}`, text: "Error: limit must be a positive integer", code: errcode.InvalidArgument},
		{name: "include_hidden is a boolean", args: `{"pattern":"*","include_hidden":"yes"}`, text: "Error: include_hidden must be a boolean", code: errcode.InvalidArgument},
		{name: "the base is a file", args: `{"pattern":"*","path":"main.go"}`, text: `Error: cannot search "WS/main.go": not a directory`, code: fs.CodeNotDirectory},
		{name: "the base is missing", args: `{"pattern":"*","path":"nope"}`, text: `Error: cannot search "WS/nope": not found`, code: fs.CodeNotFound},
	}
	for backend, tools := range srBackends(t, ws, toolfs.Config{}) {
		tl := tools.Glob()
		for _, c := range cases {
			t.Run(backend+"/"+c.name, func(t *testing.T) {
				res := rdCall(t, tl, nil, c.args)
				if c.text != "" {
					srResult(t, tl, res, ws, c.text, c.code)
				}
				if c.code != "" {
					return
				}
				require.False(t, res.IsError, res.Text)
				v, ok := res.Value.(toolfs.GlobValue)
				require.True(t, ok)
				var a struct{ Path string }
				require.NoError(t, json.Unmarshal([]byte(c.args), &a))
				base := filepath.Join(ws, a.Path)
				got := []string{}
				for _, f := range v.Files {
					got = append(got, f.Path)
					// The reported time is the file's on disk.
					st, err := os.Stat(filepath.Join(base, f.Path))
					require.NoError(t, err)
					assert.Equal(t, st.ModTime().UTC().Format(time.RFC3339Nano), f.ModTime, f.Path)
				}
				assert.Equal(t, c.files, got)
				assert.Equal(t, base, v.Path)
			})
		}
	}
}

func TestGrep(t *testing.T) {
	ws := filepath.Join(rdDir(t), "ws")
	fixture.Build(t, ws, append([]string{
		"a.go: package a\n\nfunc Alpha() {}\nfunc beta() {}\n",
		"b/b.go: package b\n\nfunc Beta() error {\n\treturn nil\n}\n",
		"b/notes.md: TODO alpha\ntodo later\n",
		"bin.dat: func Alpha\x00\n",
		"long.txt: 0123456789abcdefghij needle\n",
		"ignored.log: func Alpha\n",
		".gitignore: *.log\n",
		".hidden.go: func Alpha\n",
		"linked.go => a.go",
	}, srLoops...)...)
	const (
		binNote = " 1 binary file skipped."
		capNote = " Narrow the pattern, the path or the glob, or raise limit (at most 1000).)"
	)
	env := func(body string) string { return "<path>WS</path>\n<matches>\n" + body + "\n</matches>" }
	cases := []struct {
		name string
		args string
		text string       // the whole text, WS for the workspace
		code errcode.Code // the code of a failure
	}{
		{
			name: "files with matches by default; binary, ignored, hidden and linked files left out", args: `{"pattern":"func [A-Z]"}`,
			text: env("a.go\nb/b.go\n\n(2 files with matches (4 searched)." + binNote + ")"),
		},
		{
			name: "counts", args: `{"pattern":"func","literal":true,"output_mode":"count"}`,
			text: env("a.go: 2\nb/b.go: 1\n\n(3 matching lines in 2 files." + binNote + ")"),
		},
		{
			name: "content with context lines", args: `{"pattern":"return","output_mode":"content","context":1}`,
			text: env("b/b.go\n3- func Beta() error {\n4: \treturn nil\n5- }\n\n(1 matching line in 1 file." + binNote + ")"),
		},
		{
			name: "content separates runs that are not adjacent", args: `{"pattern":"^(package|func)","output_mode":"content","glob":"a.go"}`,
			text: env("a.go\n1: package a\n--\n3: func Alpha() {}\n4: func beta() {}\n\n(3 matching lines in 1 file.)"),
		},
		{
			name: "ignore case", args: `{"pattern":"todo","ignore_case":true,"output_mode":"count"}`,
			text: env("b/notes.md: 2\n\n(2 matching lines in 1 file." + binNote + ")"),
		},
		{
			name: "gitignored files shown with no_ignore", args: `{"pattern":"func Alpha","literal":true,"no_ignore":true}`,
			text: env("a.go\nignored.log\n\n(2 files with matches (5 searched)." + binNote + ")"),
		},
		{
			name: "hidden files shown with include_hidden", args: `{"pattern":"func Alpha","literal":true,"include_hidden":true}`,
			text: env(".hidden.go\na.go\n\n(2 files with matches (6 searched)." + binNote + ")"),
		},
		{
			name: "a binary file is skipped", args: `{"pattern":"Alpha","glob":"*.dat"}`,
			text: env("(No matches (0 files searched)." + binNote + ")"),
		},
		{
			name: "capped on files", args: `{"pattern":"a","limit":1}`,
			text: env("a.go\n\n(Showing only the first 1 file with matches; more exist." + capNote),
		},
		{
			name: "capped on lines", args: `{"pattern":"func","output_mode":"content","limit":2}`,
			text: env("a.go\n3: func Alpha() {}\n4: func beta() {}\n\n(Showing only the first 2 matching lines; more exist." + capNote),
		},
		{
			name: "a file as the path", args: `{"pattern":"beta","path":"a.go","output_mode":"content"}`,
			text: "<path>WS/a.go</path>\n<matches>\na.go\n4: func beta() {}\n\n(1 matching line in 1 file.)\n</matches>",
		},
		{
			name: "lines truncated like read", args: `{"pattern":"needle","output_mode":"content"}`,
			text: env("long.txt\n1: 0123456789abcdefghij... (line truncated to 20 chars)\n\n(1 matching line in 1 file." + binNote + ")"),
		},
		{
			name: "a .. element in the glob is refused", args: `{"pattern":"x","glob":"../*.go"}`,
			text: `Error: invalid glob pattern "../*.go": the pattern must not contain . or .. elements`, code: errcode.InvalidArgument,
		},
		{
			name: "an invalid regular expression is refused", args: `{"pattern":"("}`,
			text: "Error: invalid pattern: error parsing regexp: missing closing ): `(`", code: errcode.InvalidArgument,
		},
		{
			name: "a pattern matching a line break is refused", args: `{"pattern":"a\\nb"}`,
			text: "Error: invalid pattern: the pattern must not match a line break", code: errcode.InvalidArgument,
		},
		{name: "an unknown mode is refused", args: `{"pattern":"a","output_mode":"lines"}`, text: "Error: output_mode must be files_with_matches, count or content", code: errcode.InvalidArgument},
		{name: "context is bounded", args: `{"pattern":"a","context":101}`, text: "Error: context must be an integer between 0 and 100", code: errcode.InvalidArgument},
		{name: "context is not negative", args: `{"pattern":"a","context":-1}`, text: "Error: context must be an integer between 0 and 100", code: errcode.InvalidArgument},
		{name: "pattern is required", args: `{"pattern":""}`, text: "Error: pattern must be a non-empty string", code: errcode.InvalidArgument},
		{name: "literal is a boolean", args: `{"pattern":"a","literal":"yes"}`, text: "Error: literal must be a boolean", code: errcode.InvalidArgument},
		{name: "the path is missing", args: `{"pattern":"a","path":"nope"}`, text: `Error: cannot search "WS/nope": not found`, code: fs.CodeNotFound},
	}
	for backend, tools := range srBackends(t, ws, toolfs.Config{ReadMaxLineLength: 20}) {
		tl := tools.Grep()
		for _, c := range cases {
			t.Run(backend+"/"+c.name, func(t *testing.T) {
				srResult(t, tl, rdCall(t, tl, nil, c.args), ws, c.text, c.code)
			})
		}
	}
}

// TestGrepValue pins grep's structured value in each mode.
func TestGrepValue(t *testing.T) {
	ws := filepath.Join(rdDir(t), "ws")
	fixture.Build(t, ws, "a.go: package a\nfunc A() {}\n", "b.go: func B() {}\n", "c.bin: func\x00")
	tl := rdTools(t, toolfs.Config{}, rdLocal(t, ws)).Grep()
	for _, c := range []struct {
		mode  string
		files []toolfs.GrepFile
	}{
		{mode: "files_with_matches", files: []toolfs.GrepFile{{Path: "a.go"}, {Path: "b.go"}}},
		{mode: "count", files: []toolfs.GrepFile{{Path: "a.go", Count: 1}, {Path: "b.go", Count: 1}}},
		{mode: "content", files: []toolfs.GrepFile{
			{Path: "a.go", Count: 1, Lines: []toolfs.GrepLine{{Number: 1, Text: "package a"}, {Number: 2, Text: "func A() {}", Match: true}}},
			{Path: "b.go", Count: 1, Lines: []toolfs.GrepLine{{Number: 1, Text: "func B() {}", Match: true}}},
		}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			res := rdCall(t, tl, nil, `{"pattern":"func","output_mode":"`+c.mode+`","context":1}`)
			require.False(t, res.IsError, res.Text)
			assert.Equal(t, toolfs.GrepValue{Path: ws, Mode: c.mode, Files: c.files, Searched: 2, Binary: 1}, res.Value)
			wrConforms(t, tl.OutputSchema, res.Value)
		})
	}
}

// TestSearchCancelled checks that a cancelled search stops with FS_ABORTED.
func TestSearchCancelled(t *testing.T) {
	ws := filepath.Join(rdDir(t), "ws")
	fixture.Build(t, ws, "a.go: func A() {}\n")
	tools := rdTools(t, toolfs.Config{}, rdLocal(t, ws))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		tl   *tool.Tool
		text string
	}{
		{tools.Glob(), "Error: resolve aborted"},
		{tools.Grep(), "Error: resolve aborted"},
	} {
		res := c.tl.Handler(ctx, tool.Call{Arguments: json.RawMessage(`{"pattern":"*"}`)})
		assert.True(t, res.IsError)
		assert.EqualValues(t, fs.CodeAborted, res.Code, c.tl.Name)
		assert.Equal(t, c.text, res.Text)
	}
}
