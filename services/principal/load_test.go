package principal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/principal"
	"github.com/dsh-go/harness/services/sandbox"
)

// fixture is a directory tree for principals files: two workspaces, a
// symlink to the first, a symlink to "/", and a regular file.
type fixture struct {
	dir, alice, bob, aliceLink, rootLink, file string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	// Not t.TempDir(): a test's name may hold a comma, which a YAML flow
	// list splits at.
	tmp, err := os.MkdirTemp("", "principal")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	dir, err := filepath.EvalSymlinks(tmp)
	require.NoError(t, err)
	f := fixture{
		dir:       dir,
		alice:     filepath.Join(dir, "srv", "alice"),
		bob:       filepath.Join(dir, "srv", "bob"),
		aliceLink: filepath.Join(dir, "alice-link"),
		rootLink:  filepath.Join(dir, "root-link"),
		file:      filepath.Join(dir, "srv", "notes.txt"),
	}
	require.NoError(t, os.MkdirAll(f.alice, 0o755))
	require.NoError(t, os.MkdirAll(f.bob, 0o755))
	require.NoError(t, os.Symlink(f.alice, f.aliceLink))
	require.NoError(t, os.Symlink("/", f.rootLink))
	require.NoError(t, os.WriteFile(f.file, []byte("x"), 0o644))
	return f
}

// write writes a principals file with text (every "$ALICE", "$BOB",
// "$LINK", "$ROOTLINK", "$FILE" and "$DIR" replaced) and mode perm.
func (f fixture) write(t *testing.T, text string, perm os.FileMode) string {
	t.Helper()
	text = strings.NewReplacer("$ALICE", f.alice, "$BOB", f.bob, "$ROOTLINK", f.rootLink, "$LINK", f.aliceLink, "$FILE", f.file, "$DIR", f.dir).Replace(text)
	path := filepath.Join(f.dir, "principals.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	require.NoError(t, os.Chmod(path, perm)) // not subject to the umask
	return path
}

func TestLoad_GoodFile(t *testing.T) {
	f := newFixture(t)
	path := f.write(t, `# agents of the build farm
principals:
  alice:
    workspaces: [$LINK, $BOB/]
    mode: workspace-write
    widest-mode: danger-full-access
    max-concurrent-calls: 4
  bob:
    workspaces:
      - $BOB
    widest-mode: read-only
  carol:
    workspaces: [$ALICE]
    mode: workspace-write
  "dave@example.com":
    workspaces: [$ALICE]
`, 0o600)
	set, err := principal.Load(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"alice", "bob", "carol", "dave@example.com"}, set.Names())

	alice, ok := set.Lookup("alice")
	require.True(t, ok)
	assert.Equal(t, &principal.Principal{
		Name: "alice", Workspaces: []string{f.alice, f.bob}, // the link canonical, the slash cleaned
		Mode: sandbox.WorkspaceWrite, WidestMode: sandbox.DangerFullAccess, MaxConcurrentCalls: 4,
	}, alice)
	bob, _ := set.Lookup("bob")
	assert.Equal(t, &principal.Principal{Name: "bob", Workspaces: []string{f.bob}, WidestMode: sandbox.ReadOnly}, bob)
	carol, _ := set.Lookup("carol")
	assert.Equal(t, sandbox.WorkspaceWrite, carol.WidestMode, "widest-mode defaults to mode")
	dave, _ := set.Lookup("dave@example.com")
	assert.Equal(t, &principal.Principal{Name: "dave@example.com", Workspaces: []string{f.alice}}, dave)

	_, ok = set.Lookup("mallory")
	assert.False(t, ok, "a subject the file does not name")
	_, ok = set.Lookup("Alice")
	assert.False(t, ok, "names are compared exactly")

	// Lookup hands out a copy: changing it changes nothing in the set.
	alice.Workspaces[0] = "/"
	again, _ := set.Lookup("alice")
	assert.Equal(t, f.alice, again.Workspaces[0])
}

func TestLoad_Refused(t *testing.T) {
	good := "    workspaces: [$ALICE]\n"
	cases := []struct {
		name      string
		text      string
		perm      os.FileMode
		code      errcode.Code
		principal string
		key       string
		line      int
		wantIn    []string
	}{
		{
			name: "a relative workspace", text: "principals:\n  alice:\n    workspaces: [srv/alice]\n", principal: "alice", key: "workspaces", line: 3,
			wantIn: []string{`"srv/alice" is not an absolute path`},
		},
		{
			name: "a workspace that does not exist", text: "principals:\n  alice:\n    workspaces: [$DIR/nope]\n", principal: "alice", key: "workspaces", line: 3,
			wantIn: []string{"nope\" is not an existing directory"},
		},
		{
			name: "a workspace that is a file", text: "principals:\n  alice:\n    workspaces: [$FILE]\n", principal: "alice", key: "workspaces", line: 3,
			wantIn: []string{"notes.txt\" is not an existing directory"},
		},
		{
			name: "a workspace of /", text: "principals:\n  alice:\n    workspaces:\n      - $ALICE\n      - /\n", principal: "alice", key: "workspaces", line: 5,
			wantIn: []string{`"/" is the whole file system, never a workspace`},
		},
		{
			name: "a workspace of /. spelled otherwise", text: "principals:\n  alice:\n    workspaces: [/./]\n", principal: "alice", key: "workspaces", line: 3,
			wantIn: []string{`"/./" is the whole file system`},
		},
		{
			name: "a workspace that resolves to /", text: "principals:\n  alice:\n    workspaces: [$ROOTLINK]\n", principal: "alice", key: "workspaces", line: 3,
			wantIn: []string{`root-link" resolves to "/"`},
		},
		{
			name: "a workspace listed twice through a symlink", text: "principals:\n  alice:\n    workspaces: [$ALICE, $LINK]\n", principal: "alice", key: "workspaces", line: 3,
			wantIn: []string{`alice-link" is listed twice (both resolve to`},
		},
		{
			name: "a workspace that is not a string", text: "principals:\n  alice:\n    workspaces: [[/srv]]\n", principal: "alice", key: "workspaces", line: 3,
			wantIn: []string{"want an absolute directory, got a list"},
		},
		{
			name: "workspaces not a list", text: "principals:\n  alice:\n    workspaces: $ALICE\n", principal: "alice", key: "workspaces", line: 3,
			wantIn: []string{"want a list of absolute directories"},
		},
		{
			name: "no workspace", text: "principals:\n  alice:\n    mode: read-only\n", principal: "alice", key: "workspaces", line: 2,
			wantIn: []string{"at least one workspace is required"},
		},
		{
			name: "an empty list of workspaces", text: "principals:\n  alice:\n    workspaces: []\n", principal: "alice", key: "workspaces", line: 2,
			wantIn: []string{"at least one workspace is required"},
		},
		{
			name: "a principal with no body", text: "principals:\n  alice:\n", principal: "alice", key: "workspaces", line: 2,
			wantIn: []string{"at least one workspace is required"},
		},
		{
			name: "an unknown mode, near a known one", text: "principals:\n  alice:\n" + good + "    mode: workspace_write\n", principal: "alice", key: "mode", line: 4,
			wantIn: []string{`unknown mode "workspace_write": allowed values are read-only, workspace-write, danger-full-access (did you mean "workspace-write"?)`},
		},
		{
			name: "an unknown widest-mode", text: "principals:\n  alice:\n" + good + "    widest-mode: root\n", principal: "alice", key: "widest-mode", line: 4,
			wantIn: []string{`unknown mode "root": allowed values are read-only, workspace-write, danger-full-access`},
		},
		{
			name: "a mode that is not a string", text: "principals:\n  alice:\n" + good + "    mode: [read-only]\n", principal: "alice", key: "mode", line: 4,
			wantIn: []string{"want one of read-only, workspace-write, danger-full-access, got a list"},
		},
		{
			name: "a mode wider than widest-mode", text: "principals:\n  alice:\n" + good + "    mode: danger-full-access\n    widest-mode: workspace-write\n", principal: "alice", key: "mode", line: 2,
			wantIn: []string{`mode "danger-full-access" is wider than widest-mode "workspace-write"`},
		},
		{
			name: "a negative max-concurrent-calls", text: "principals:\n  alice:\n" + good + "    max-concurrent-calls: -1\n", principal: "alice", key: "max-concurrent-calls", line: 4,
			wantIn: []string{"-1 is negative"},
		},
		{
			name: "a max-concurrent-calls that is not a whole number", text: "principals:\n  alice:\n" + good + "    max-concurrent-calls: 2.5\n", principal: "alice", key: "max-concurrent-calls", line: 4,
			wantIn: []string{`want a whole number, got "2.5"`},
		},
		{
			name: "a max-concurrent-calls given as a string", text: "principals:\n  alice:\n" + good + "    max-concurrent-calls: \"4\"\n", principal: "alice", key: "max-concurrent-calls", line: 4,
			wantIn: []string{`want a whole number, got "4"`},
		},
		{
			name: "an unknown key of a principal, near a known one", text: "principals:\n  alice:\n    workspace: [$ALICE]\n", principal: "alice", line: 3,
			wantIn: []string{`unknown key "workspace" (did you mean "workspaces"?); the keys are max-concurrent-calls, mode, widest-mode, workspaces`},
		},
		{
			name: "an unknown key far from every key", text: "principals:\n  alice:\n" + good + "    frobnicate: blue\n", principal: "alice", line: 4,
			wantIn: []string{`unknown key "frobnicate"; the keys are`},
		},
		{
			name: "a key of a principal given twice", text: "principals:\n  alice:\n" + good + "    mode: read-only\n    mode: danger-full-access\n", principal: "alice", key: "mode", line: 5,
			wantIn: []string{"the key is given twice"},
		},
		{
			name: "an unknown top-level key, near the one", text: "principal:\n  alice:\n" + good, line: 1,
			wantIn: []string{`unknown key "principal" (did you mean "principals"?); the file has the one key "principals"`},
		},
		{
			name: "an empty principals map", text: "principals: {}\n", line: 1,
			wantIn: []string{`no principals: "principals" must map each subject`},
		},
		{
			name: "principals null", text: "principals:\n", line: 1,
			wantIn: []string{"no principals"},
		},
		{name: "an empty file", text: "", wantIn: []string{`no principals: list at least one under "principals"`}},
		{name: "a list at the top", text: "- alice\n", line: 1, wantIn: []string{`want a mapping with the one key "principals"`}},
		{name: "not YAML", text: "principals:\n  alice: [\n", wantIn: []string{"not valid YAML"}},
		{
			name: "a name with a space", text: "principals:\n  \"al ice\":\n" + good, principal: "al ice", line: 2,
			wantIn: []string{`the name "al ice" holds whitespace or control characters`},
		},
		{
			name: "a name with a control character", text: "principals:\n  \"al\\u0007ice\":\n" + good, principal: "al\aice", line: 2,
			wantIn: []string{`the name "al\aice" holds whitespace or control characters`},
		},
		{
			name: "a name with a tab at its end", text: "principals:\n  \"alice\\t\":\n" + good, principal: "alice\t", line: 2,
			wantIn: []string{`holds whitespace or control characters`},
		},
		{
			name: "an empty name", text: "principals:\n  \"\":\n" + good, line: 2,
			wantIn: []string{"a principal's name must be a non-empty string"},
		},
		{
			name: "a principal listed twice", text: "principals:\n  alice:\n" + good + "  alice:\n" + good, principal: "alice", line: 4,
			wantIn: []string{"the principal is listed twice"},
		},
		{
			name: "a file writable by its group", text: "principals:\n  alice:\n" + good, perm: 0o620, code: principal.CodeUnsafe,
			wantIn: []string{"is writable by its group or others (mode 0620)", "chmod go-w"},
		},
		{
			name: "a file writable by others", text: "principals:\n  alice:\n" + good, perm: 0o602, code: principal.CodeUnsafe,
			wantIn: []string{"is writable by its group or others (mode 0602)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			perm := tc.perm
			if perm == 0 {
				perm = 0o640
			}
			path := f.write(t, tc.text, perm)
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			set, err := principal.Load(path)
			require.Error(t, err)
			assert.Nil(t, set)
			var pe *principal.Error
			require.True(t, errors.As(err, &pe), "%T: %v", err, err)
			code := tc.code
			if code == "" {
				code = principal.CodeInvalid
			}
			assert.Equal(t, code, pe.Code)
			assert.Equal(t, path, pe.File)
			assert.Equal(t, tc.principal, pe.Principal)
			assert.Equal(t, tc.key, pe.Key)
			assert.Equal(t, tc.line, pe.Line)
			assert.Contains(t, err.Error(), "--principals "+path)
			if tc.principal != "" {
				assert.Contains(t, err.Error(), "principal ")
			}
			if tc.key != "" {
				assert.Contains(t, err.Error(), `key "`+tc.key+`"`)
			}
			for _, w := range tc.wantIn {
				assert.Contains(t, err.Error(), w)
			}

			// Nothing changed on disk: the file, its mode, the workspaces.
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, before, after)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, perm, fi.Mode().Perm())
		})
	}
}

func TestLoad_FileErrors(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		path   string
		wantIn string
	}{
		{name: "a missing file", path: filepath.Join(f.dir, "missing.yaml"), wantIn: "cannot be read"},
		{name: "a directory", path: f.alice, wantIn: "not a regular file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := principal.Load(tc.path)
			var pe *principal.Error
			require.True(t, errors.As(err, &pe), "%T: %v", err, err)
			assert.Equal(t, principal.CodeInvalid, pe.Code)
			assert.Equal(t, "--principals "+tc.path+": "+pe.Msg+suffix(pe), err.Error())
			assert.Contains(t, err.Error(), tc.wantIn)
		})
	}
}

// suffix is the cause part of an *Error's text.
func suffix(e *principal.Error) string {
	if e.Err == nil {
		return ""
	}
	return ": " + e.Err.Error()
}

func TestLoad_TooLarge(t *testing.T) {
	f := newFixture(t)
	path := f.write(t, "principals:\n  alice:\n    workspaces: [$ALICE]\n"+strings.Repeat("# padding\n", 110_000), 0o600)
	_, err := principal.Load(path)
	var pe *principal.Error
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, principal.CodeInvalid, pe.Code)
	assert.Contains(t, err.Error(), "larger than 1048576 bytes")
}

func TestLoad_RefusesAnotherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user")
	}
	f := newFixture(t)
	path := f.write(t, "principals:\n  alice:\n    workspaces: [$ALICE]\n", 0o600)
	require.NoError(t, os.Chown(path, 1000, 1000))
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = principal.Load(path)
	var pe *principal.Error
	require.True(t, errors.As(err, &pe), "%T: %v", err, err)
	assert.Equal(t, principal.CodeUnsafe, pe.Code)
	assert.Contains(t, err.Error(), "belongs to uid 1000, neither this process's user nor root")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the file is unchanged")
}
