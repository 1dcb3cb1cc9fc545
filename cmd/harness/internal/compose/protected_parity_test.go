package compose_test

import (
	"fmt"
	iofs "io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// protectedLayout is the tree every row of protectedTable starts from, under
// a fresh base: a workspace (ws), a temp root (temp) and an extra writable
// root (extra), holding
//   - a bare repository ws/proj.git (HEAD, objects, refs, config, hooks);
//   - a linked worktree ws/wt whose `.git` file names its gitdir
//     ws/common/worktrees/wt, whose commondir names ws/common: a common
//     directory git accepts (objects, refs) without a HEAD of its own, so
//     not a repository by its shape;
//   - a worktree ws/sep whose `.git` file names a gitdir in the extra root,
//     extra/sep.git, shaped like a repository;
//   - a worktree ws/bld whose `.git` file names extra/bld.git, a gitdir in
//     the extra root not (yet) shaped like one: config and hooks, no HEAD;
//   - a repository whose `.git` lies 14 directories below the workspace;
//   - a second linked worktree ws/wt2 whose gitdir ws/gd lies at the top of
//     the workspace, a directory without subdirectories;
//   - plain files, one (src.txt) the source of every move, and a host-run
//     file below the top (ws/sub/.envrc).
//
// Every protected file holds "old\n"; a mutation that lands leaves "x\n"
// there (write, edit, move), nothing (delete) or a directory (mkdir).
var protectedLayout = []string{
	"ws/plain.txt: old\n", "ws/src.txt: x\n",
	"ws/proj.git/HEAD: ref: refs/heads/main\n", "ws/proj.git/objects/", "ws/proj.git/refs/heads/",
	"ws/proj.git/config: old\n", "ws/proj.git/hooks/",
	"ws/common/objects/", "ws/common/refs/heads/", "ws/common/config: old\n", "ws/common/hooks/",
	"ws/common/worktrees/wt/HEAD: ref: refs/heads/wt\n", "ws/common/worktrees/wt/commondir: ../..\n",
	"ws/wt/.git: gitdir: ../common/worktrees/wt\n", "ws/wt/file.txt: old\n",
	"ws/sep/.git: gitdir: ../../extra/sep.git\n",
	"extra/sep.git/HEAD: ref: refs/heads/main\n", "extra/sep.git/objects/", "extra/sep.git/refs/",
	"extra/sep.git/config: old\n", "extra/sep.git/hooks/",
	"ws/bld/.git: gitdir: ../../extra/bld.git\n", "extra/bld.git/config: old\n", "extra/bld.git/hooks/",
	deep + "/.git/config: old\n", deep + "/.git/hooks/",
	"ws/gd/HEAD: ref: refs/heads/wt2\n", "ws/gd/commondir: ../common\n", "ws/wt2/.git: gitdir: ../gd\n",
	"temp/", "extra/plain.txt: old\n", "ws/sub/.envrc: old\n",
}

// deep is a directory 13 levels below the workspace: its `.git` is at depth
// 14.
const deep = "ws/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13"

// protectedRow is one target of protectedTable.
type protectedRow struct {
	name string
	// target is relative to the base; it exists (holding "old\n") unless
	// fresh.
	target string
	fresh  bool
	// lateFile, when set, is created (holding "old\n") after the server
	// started and before the call: a --protect match created after start.
	lateFile string
	// lands says in which modes the mutation lands (both families); in the
	// others nothing on disk changes.
	lands map[sandbox.Mode]bool
	// differs names the modes in which the families cannot agree yet, and
	// why: each is listed in docs/configuration.md's known differences.
	differs map[sandbox.Mode]string
}

// newProtectedMatchDiff is why a --protect match a command creates is
// writable: the runner makes read-only only what exists when the command
// starts.
const newProtectedMatchDiff = "a command creates a --protect match that did not exist when it started (the runner binds read-only only what exists); the file tools refuse it"

var protectedTable = []protectedRow{
	{name: "a plain file in the workspace", target: "ws/plain.txt", lands: notRO},
	{name: "a plain file in the extra root", target: "extra/plain.txt", lands: notRO},
	{name: "a worktree's own file", target: "ws/wt/file.txt", lands: notRO},
	{name: "a bare repository's config", target: "ws/proj.git/config", lands: onlyFull},
	{name: "a new hook in a bare repository", target: "ws/proj.git/hooks/post-checkout", fresh: true, lands: onlyFull},
	{name: "a linked worktree's common directory config", target: "ws/common/config", lands: onlyFull},
	{name: "a new hook in a linked worktree's common directory", target: "ws/common/hooks/pre-commit", fresh: true, lands: onlyFull},
	{name: "a linked worktree's gitdir", target: "ws/common/worktrees/wt/config.worktree", fresh: true, lands: onlyFull},
	{name: "a gitdir in another writable root", target: "extra/sep.git/config", lands: onlyFull},
	{name: "a new hook in a gitdir in another writable root", target: "extra/sep.git/hooks/post-checkout", fresh: true, lands: onlyFull},
	{name: "a gitdir not shaped like a repository in another writable root", target: "extra/bld.git/config", lands: onlyFull},
	{name: "a new HEAD in a gitdir not shaped like a repository", target: "extra/bld.git/HEAD", fresh: true, lands: onlyFull},
	{name: "a .git at depth 14", target: deep + "/.git/config", lands: onlyFull},
	{name: "a new hook in a .git at depth 14", target: deep + "/.git/hooks/pre-commit", fresh: true, lands: onlyFull},
	{name: "a --protect match created after start", target: "ws/late.pem", lateFile: "ws/late.pem", lands: onlyFull},
	{name: "a new ref in a bare repository (--vcs commit)", target: "ws/proj.git/refs/heads/topic", fresh: true, lands: notRO},
	{name: "a new config.worktree in a bare repository", target: "ws/proj.git/config.worktree", fresh: true, lands: onlyFull},
	{name: "a new host-run file at the top of the workspace", target: "ws/.mcp.json", fresh: true, lands: onlyFull},
	{name: "an existing host-run file below the top", target: "ws/sub/.envrc", lands: onlyFull},
	{
		name: "a --protect match the call creates", target: "ws/new.pem", fresh: true, lands: onlyFull,
		differs: map[sandbox.Mode]string{ww: newProtectedMatchDiff},
	},
}

// protectedOp is one mutation, as a file tool call and as the command doing
// the same.
type protectedOp struct {
	name string
	// fresh says whether it mutates a new entry (write, mkdir, move) or an
	// existing file (write, edit, delete, move with overwrite).
	fresh bool
	tool  string
	args  func(src, target string) map[string]any
	cmd   func(src, target string) string
	// want is the target's snapshot entry once the mutation landed ("" for
	// none), without permission bits (withoutPermissions).
	want string
}

var protectedOps = []protectedOp{
	{
		name: "write", tool: "write", want: "- x",
		args: func(_, t string) map[string]any { return map[string]any{"file_path": t, "content": "x\n"} },
		cmd:  func(_, t string) string { return "printf 'x\\n' > " + quote(t) },
	},
	{
		name: "edit", tool: "edit", want: "- x",
		args: func(_, t string) map[string]any {
			return map[string]any{"file_path": t, "old_string": "old", "new_string": "x"}
		},
		cmd: func(_, t string) string { return "sed -i 's/old/x/' " + quote(t) },
	},
	{
		name: "delete", tool: "delete", want: "",
		args: func(_, t string) map[string]any { return map[string]any{"path": t} },
		cmd:  func(_, t string) string { return "rm -f " + quote(t) },
	},
	{
		name: "move over", tool: "move", want: "- x",
		args: func(s, t string) map[string]any {
			return map[string]any{"source": s, "destination": t, "overwrite": true}
		},
		cmd: func(s, t string) string { return "mv -f " + quote(s) + " " + quote(t) },
	},
	{
		name: "write new", tool: "write", fresh: true, want: "- x",
		args: func(_, t string) map[string]any { return map[string]any{"file_path": t, "content": "x\n"} },
		cmd:  func(_, t string) string { return "printf 'x\\n' > " + quote(t) },
	},
	{
		name: "mkdir", tool: "mkdir", fresh: true, want: "d",
		args: func(_, t string) map[string]any { return map[string]any{"path": t} },
		cmd:  func(_, t string) string { return "mkdir -p " + quote(t) },
	},
	{
		name: "move new", tool: "move", fresh: true, want: "- x",
		args: func(s, t string) map[string]any { return map[string]any{"source": s, "destination": t} },
		cmd:  func(s, t string) string { return "mv " + quote(s) + " " + quote(t) },
	},
}

// ageDirs sets the times of every directory beneath base an hour back.
func ageDirs(t *testing.T, base string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(base, func(p string, d iofs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	}))
}

// quote quotes p for /bin/sh (the fixture's paths hold no single quote).
func quote(p string) string { return "'" + p + "'" }

// TestProtectedParity (issue 21) runs every mutating file tool and the
// command doing the same through every target of protectedTable in every
// mode, on a fresh layout each, and checks the disk: where the row lands,
// the target holds what the mutation leaves; elsewhere nothing changed; and
// the two families leave the same tree. It checks what the disk holds, not
// concurrency: under the race detector it skips, and make test runs it
// without (beside the race-enabled suite, where its 420 servers were a
// third of the suite's CPU).
func TestProtectedParity(t *testing.T) {
	if raceDetector {
		t.Skip("a table of what the disk holds, run without the race detector (make test runs it so)")
	}
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	for _, row := range protectedTable {
		for _, op := range protectedOps {
			if op.fresh != row.fresh {
				continue
			}
			for _, mode := range sandbox.Modes() {
				t.Run(row.name+"/"+op.name+"/"+string(mode), func(t *testing.T) {
					byTool := runProtected(t, row, op, mode, false)
					byExec := runProtected(t, row, op, mode, true)
					if why, ok := row.differs[mode]; ok {
						assert.NotEqual(t, byTool, byExec, "a known difference (%s) no longer differs: remove it from the table and docs/configuration.md", why)
						return
					}
					assert.Equal(t, byTool, byExec, "the file tools and the runner disagree on disk")
				})
			}
		}
	}
}

// runProtected runs op on row.target in mode, through the tool or the
// command, on a fresh layout; checks the disk against the row's verdict
// (for the command, only where the row does not say the families differ);
// and returns the tree afterwards, without permission bits.
func runProtected(t *testing.T, row protectedRow, op protectedOp, mode sandbox.Mode, viaExec bool) map[string]string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	fixture.Build(t, base, protectedLayout...)
	ws := filepath.Join(base, "ws")
	tools, app := toolsByName(t, config.Config{
		FS: "sandbox", Exec: "sandbox", Mode: string(mode), Workspace: ws,
		TempRoots: []string{filepath.Join(base, "temp")}, WritableRoots: []string{filepath.Join(base, "extra")},
		Protect: []string{"*.pem"}, OneShot: true, LogLevel: "error", LogFormat: "json",
	})
	defer app.RequireStop()
	sess := session.New("s", ws)
	// Every directory unchanged for an hour: the searches after the first
	// answer them from the cache (a search reads again a directory
	// changed within 2 s of its reading), as in a workspace at rest.
	ageDirs(t, base)
	if mode == ww {
		// A first search, so the call's answers from the cache.
		r := call(t, sess, tools["exec"], map[string]any{"command": "true"})
		require.False(t, r.IsError, r.Text)
	}
	if row.lateFile != "" {
		// After the start, so no search at start-up can have seen it.
		fixture.Build(t, base, row.lateFile+": old\n")
	}
	before := withoutPermissions(fixture.Snapshot(t, base))
	src, target := filepath.Join(ws, "src.txt"), filepath.Join(base, row.target)
	var how string
	if viaExec {
		r := call(t, sess, tools["exec"], map[string]any{"command": op.cmd(src, target)})
		how = "exec: " + r.Text
	} else {
		r := call(t, sess, tools[op.tool], op.args(src, target))
		how = op.tool + ": " + r.Text
	}
	after := withoutPermissions(fixture.Snapshot(t, base))
	if _, differs := row.differs[mode]; differs && viaExec {
		return after
	}
	if row.lands[mode] {
		got, ok := after[row.target]
		if op.want == "" {
			assert.False(t, ok, "%s under %s: the target should be gone (%s)", row.target, mode, how)
		} else {
			assert.Equal(t, op.want, strings.TrimSpace(got), "%s under %s: the mutation should land (%s)", row.target, mode, how)
		}
	} else {
		assert.Equal(t, before, after, "%s under %s: nothing may change (%s)", row.target, mode, how)
	}
	_ = os.Remove(src)
	return after
}

// TestProtectedGitPayload (issue 21) plants a core.fsmonitor command in the
// config of a bare repository (in the extra writable root) whose linked
// worktree is the workspace (headless: with the bare repository's HEAD
// removed, a common directory git still uses though it is not shaped like a
// repository), through the edit tool and through exec, then
// runs the user's next `git status` in the worktree, outside any sandbox:
// under workspace-write neither family plants it, so git runs nothing;
// under danger-full-access both do and git runs it (the check that the
// payload is real).
func TestProtectedGitPayload(t *testing.T) {
	if subproc.Probe().LandlockABI < 1 {
		t.Skip("Landlock is not available on this kernel: confined commands are refused")
	}
	gitPath, err := osexec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	for _, headless := range []bool{false, true} {
		for _, mode := range []sandbox.Mode{ww, dfa} {
			for _, viaExec := range []bool{false, true} {
				t.Run(fmt.Sprintf("headless=%v/%s/exec=%v", headless, mode, viaExec), func(t *testing.T) {
					base, err := filepath.EvalSymlinks(t.TempDir())
					require.NoError(t, err)
					fixture.Build(t, base, "temp/", "extra/")
					ws, bare := filepath.Join(base, "ws"), filepath.Join(base, "extra", "proj.git")
					gitEnv := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
						"GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+base)
					runGit := func(args ...string) string {
						cmd := osexec.Command(gitPath, args...)
						cmd.Env = gitEnv
						out, err := cmd.CombinedOutput()
						require.NoError(t, err, "git %v: %s", args, out)
						return strings.TrimSpace(string(out))
					}
					runGit("init", "-q", "--bare", bare)
					tree := runGit("--git-dir="+bare, "mktree")
					commit := runGit("--git-dir="+bare, "commit-tree", "-m", "init", tree)
					runGit("--git-dir="+bare, "update-ref", "refs/heads/main", commit)
					runGit("--git-dir="+bare, "worktree", "add", "-q", ws, "main")
					if headless {
						// A common directory git still takes from the
						// worktree's commondir, though not shaped like a
						// repository of its own.
						require.NoError(t, os.Remove(filepath.Join(bare, "HEAD")))
					}

					tools, app := toolsByName(t, config.Config{
						FS: "sandbox", Exec: "sandbox", Mode: string(mode), Workspace: ws,
						TempRoots: []string{filepath.Join(base, "temp")}, WritableRoots: []string{filepath.Join(base, "extra")},
						OneShot: true, LogLevel: "error", LogFormat: "json",
					})
					defer app.RequireStop()
					sess := session.New("s", ws)
					cfgFile := filepath.Join(bare, "config")
					pwned := filepath.Join(base, "pwned")
					payload := "\tfsmonitor = touch " + pwned + "\n"
					var r string
					if viaExec {
						r = call(t, sess, tools["exec"], map[string]any{"command": "printf '[core]\\n" + strings.ReplaceAll(payload, "\t", "\\t") + "' >> " + quote(cfgFile)}).Text
					} else {
						old := readFile(t, cfgFile)
						r = call(t, sess, tools["write"], map[string]any{"file_path": cfgFile, "content": old + "[core]\n" + payload}).Text
					}
					planted := strings.Contains(readFile(t, cfgFile), "fsmonitor")
					cmd := osexec.Command(gitPath, "-C", ws, "status", "--porcelain")
					cmd.Env = gitEnv
					_, _ = cmd.CombinedOutput()
					_, statErr := os.Stat(pwned)
					ran := statErr == nil
					if mode == dfa {
						assert.True(t, planted, "danger-full-access plants the payload (%s)", r)
						assert.True(t, ran, "git status runs the payload planted under danger-full-access")
						return
					}
					assert.False(t, planted, "workspace-write must not plant the payload (%s)", r)
					assert.False(t, ran, "git status ran a payload planted under workspace-write")
				})
			}
		}
	}
}
