package sandboxpolicy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

func TestNewRejectsInvalidConfig(t *testing.T) {
	dir := realTempDir(t)
	rootLink := symlink(t, "/", filepath.Join(dir, "root-link"))
	rootLinkChain := symlink(t, rootLink, filepath.Join(dir, "root-link-chain"))

	tests := []struct {
		name string
		cfg  sandboxpolicy.Config
		// wantIn are substrings the error message must contain.
		wantIn []string
	}{
		{
			name:   "P-09 unknown mode yolo fails and lists the three allowed values",
			cfg:    sandboxpolicy.Config{Mode: "yolo"},
			wantIn: []string{`"yolo"`, "read-only, workspace-write, danger-full-access"},
		},
		{
			name:   "P-09 a mode with different case fails",
			cfg:    sandboxpolicy.Config{Mode: "Workspace-Write"},
			wantIn: []string{`"Workspace-Write"`, "read-only, workspace-write, danger-full-access"},
		},
		{
			name:   "a relative WorkspaceRoot fails and names the field",
			cfg:    sandboxpolicy.Config{WorkspaceRoot: "rel/ws"},
			wantIn: []string{"WorkspaceRoot", `"rel/ws"`},
		},
		{
			name:   "a dot-relative WorkspaceRoot fails",
			cfg:    sandboxpolicy.Config{WorkspaceRoot: "./ws"},
			wantIn: []string{"WorkspaceRoot", `"./ws"`},
		},
		{
			name:   `fail closed: a temp root of "/" fails`,
			cfg:    sandboxpolicy.Config{TempRoots: []string{"/"}},
			wantIn: []string{"TempRoots", `"/"`},
		},
		{
			name:   `fail closed: a temp root that resolves to "/" through a symlink fails`,
			cfg:    sandboxpolicy.Config{TempRoots: []string{rootLink}},
			wantIn: []string{"TempRoots", `"` + rootLink + `"`},
		},
		{
			name:   `fail closed: a temp root that resolves to "/" through a chain of symlinks fails`,
			cfg:    sandboxpolicy.Config{TempRoots: []string{rootLinkChain}},
			wantIn: []string{"TempRoots", `"` + rootLinkChain + `"`},
		},
		{
			name:   `fail closed: a temp root that resolves to "/" through ".." fails`,
			cfg:    sandboxpolicy.Config{TempRoots: []string{"/tmp/.."}},
			wantIn: []string{"TempRoots", `"/tmp/.."`},
		},
		{
			name:   `fail closed: a missing temp root that cleans to "/" fails`,
			cfg:    sandboxpolicy.Config{TempRoots: []string{"/no-such-harness-dir/.."}},
			wantIn: []string{"TempRoots"},
		},
		{
			name:   `fail closed: "/" among good temp roots fails`,
			cfg:    sandboxpolicy.Config{TempRoots: []string{dir, "/"}},
			wantIn: []string{"TempRoots", `"/"`},
		},
		{
			name:   "an empty temp root entry fails",
			cfg:    sandboxpolicy.Config{TempRoots: []string{dir, ""}},
			wantIn: []string{"TempRoots", `""`},
		},
		{
			name:   "a whitespace-only temp root entry fails",
			cfg:    sandboxpolicy.Config{TempRoots: []string{" \t"}},
			wantIn: []string{"TempRoots"},
		},
		{
			name:   "a relative temp root fails",
			cfg:    sandboxpolicy.Config{TempRoots: []string{"tmp"}},
			wantIn: []string{"TempRoots", `"tmp"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := sandboxpolicy.New(tc.cfg)
			require.Error(t, err)
			assert.Nil(t, svc)
			for _, s := range tc.wantIn {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	t.Run("P-01 the zero Config is read-only with the canonical process working directory as root", func(t *testing.T) {
		wd, err := os.Getwd()
		require.NoError(t, err)
		svc := mustNew(t, sandboxpolicy.Config{})
		assert.Equal(t, sandbox.ReadOnly, svc.Default().Mode)
		assert.Equal(t, sandbox.ReadOnly, svc.Default().Mode)
		assert.Equal(t, canonical(t, wd), svc.Default().WorkspaceRoot)
		assert.True(t, filepath.IsAbs(svc.Default().WorkspaceRoot))
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: sandbox.ReadOnly, WorkspaceRoot: canonical(t, wd)}, svc), svc.Default())
	})

	t.Run("X-04 the zero Config pins the canonical default temp roots", func(t *testing.T) {
		svc := mustNew(t, sandboxpolicy.Config{})
		want := []string{canonical(t, "/tmp")}
		if c := canonical(t, os.TempDir()); c != want[0] {
			want = append(want, c)
		}
		assert.Equal(t, want, svc.Default().TempRoots)
		assert.Equal(t, want, svc.Default().TempRoots)
	})

	t.Run("DefaultTempRoots is /tmp then os.TempDir()", func(t *testing.T) {
		assert.Equal(t, []string{"/tmp", os.TempDir()}, sandboxpolicy.DefaultTempRoots())
	})

	t.Run("P-02 a missing WorkspaceRoot is kept as spelled, then resolved lexically", func(t *testing.T) {
		requireMissing(t, "/ws")
		svc := mustNew(t, sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/ws/../ws/./sub"})
		assert.Equal(t, "/ws/sub", svc.Default().WorkspaceRoot)
		assert.Equal(t, stamped(sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/ws/sub"}, svc), svc.Default())
	})

	t.Run("P-02 an existing WorkspaceRoot reached through a symlink is canonicalized first", func(t *testing.T) {
		dir := realTempDir(t)
		physical := mkdir(t, filepath.Join(dir, "physical", "child"))
		link := symlink(t, physical, filepath.Join(dir, "link"))
		svc := mustNew(t, sandboxpolicy.Config{WorkspaceRoot: link + "/.."})
		assert.Equal(t, filepath.Join(dir, "physical"), svc.Default().WorkspaceRoot,
			"the symlink is followed before .. is applied")
	})

	t.Run("P-01 every configured mode is kept as the default", func(t *testing.T) {
		for _, m := range sandbox.Modes() {
			svc := mustNew(t, sandboxpolicy.Config{Mode: m})
			assert.Equal(t, m, svc.Default().Mode)
			assert.Equal(t, m, svc.Default().Mode)
		}
	})
}

func TestNewTempRoots(t *testing.T) {
	dir := realTempDir(t)
	t1 := mkdir(t, filepath.Join(dir, "t1"))
	t2 := mkdir(t, filepath.Join(dir, "t2"))
	t1Link := symlink(t, t1, filepath.Join(dir, "t1-link"))

	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{name: "X-04 explicit temp roots are canonicalized and kept in order", in: []string{t2, t1Link}, want: []string{t2, t1}},
		{name: "X-04 explicit temp roots that canonicalize to one directory are deduplicated", in: []string{t1, t1Link, t1 + "/", t1 + "/./"}, want: []string{t1}},
		{name: "X-04 a missing explicit temp root is kept as spelled, cleaned", in: []string{dir + "/missing/../missing2/"}, want: []string{dir + "/missing2"}},
		{name: "an explicit empty list configures no temp roots", in: []string{}, want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := mustNew(t, sandboxpolicy.Config{TempRoots: tc.in})
			assert.ElementsMatch(t, tc.want, svc.Default().TempRoots)
		})
	}

	t.Run("the caller's slice is not aliased: changing it after New changes nothing", func(t *testing.T) {
		in := []string{t1, t2}
		svc := mustNew(t, sandboxpolicy.Config{TempRoots: in})
		in[0] = "/"
		assert.Equal(t, []string{t1, t2}, svc.Default().TempRoots)
	})

	t.Run("TempRoots returns a copy: changing it changes nothing", func(t *testing.T) {
		svc := mustNew(t, sandboxpolicy.Config{TempRoots: []string{t1, t2}})
		got := svc.Default().TempRoots
		got[0] = "/"
		assert.Equal(t, []string{t1, t2}, svc.Default().TempRoots)
	})
}
