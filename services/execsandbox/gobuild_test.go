//go:build linux

package execsandbox_test

import (
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestGoModuleWithoutGitBuilds (issue 34, "no trace"): the reservation of
// a workspace root's missing `.git` must not make the root look like a
// repository. Go stamps a binary with the status of the repository whose
// `.git` directory it finds above the module, and fails when git finds
// none ("error obtaining VCS status: exit status 128"); outside any
// repository the placeholder is a named pipe, which Go does not take for
// a repository and git passes over (an empty file would make git fail in
// the root, `git clone` included), and inside one (the workspace a
// directory of a larger checkout) an empty directory, which git passes
// over to the repository above. Either way the command still cannot make
// a `.git`, and the host's listing shows nothing after it.
func TestGoModuleWithoutGitBuilds(t *testing.T) {
	longTest(t)
	goBin, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	goRoot, err := osexec.Command(goBin, "env", "GOROOT").Output()
	require.NoError(t, err)
	goBin = filepath.Join(string(goRoot[:len(goRoot)-1]), "bin", "go")
	module := map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() { println(\"built and ran\") }\n",
	}
	for _, c := range []struct {
		name string
		// parentRepo makes the workspace's parent a git repository;
		// parentHeld gives it the reserved .git of another command (a
		// session on the parent directory), which is none.
		parentRepo, parentHeld bool
		// build runs go build there.
		build bool
		// dotGit is what the command sees at the workspace's `.git`.
		dotGit string
	}{
		// go build itself in the first only (a cold build cache costs
		// seconds): the others check what decides it, the kind.
		{name: "a module in no repository", dotGit: "fifo", build: true},
		{name: "a module in a directory of a larger repository", parentRepo: true, dotGit: "dir"},
		{name: "a module below a root another command holds", parentHeld: true, dotGit: "fifo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := primaryOwner()
			w := newWorld(t, o, exec.Config{}, func(f fixture) {
				writeTree(t, f.ws, module)
				out, err := osexec.Command("git", "init", "-q", "--bare", filepath.Join(f.cache, "src.git")).CombinedOutput()
				require.NoError(t, err, string(out))
				if c.parentHeld {
					r, err := subproc.ReserveEither(filepath.Join(filepath.Dir(f.ws), ".git"), false)
					require.NoError(t, err)
					require.NotNil(t, r)
					t.Cleanup(func() { subproc.ReleaseAll(r) })
				}
				if c.parentRepo {
					out, err := osexec.Command("git", "init", "-q", filepath.Dir(f.ws)).CombinedOutput()
					require.NoError(t, err, string(out))
					if os.Geteuid() == 0 {
						require.NoError(t, chownTo(filepath.Dir(f.ws), o.uid))
						require.NoError(t, chownTree(filepath.Join(filepath.Dir(f.ws), ".git"), o.uid))
					}
				}
			})
			gocache := filepath.Join(w.cache, "go")
			build := ""
			if c.build {
				build = goBin + " build -o hello . && ./hello && "
			}
			res := w.run(t, sandbox.WorkspaceWrite, "export GOCACHE="+gocache+"/build GOPATH="+gocache+"/path GOTMPDIR="+w.cache+
				" GOTOOLCHAIN=local GOFLAGS= GOENV=off; "+
				"if [ -d .git ]; then echo dir; elif [ -p .git ]; then echo fifo; else echo other; fi; "+
				build+
				// The reservation holds whatever its placeholder's type.
				"{ mkdir -p .git/hooks || echo > .git || ln -s . .git || true; }; "+
				"git status --short >/dev/null 2>&1 && echo git-ok || echo no-repository; "+
				// git in the root: a clone, which needs no repository there.
				"git clone -q "+filepath.Join(w.cache, "src.git")+" cloned 2>/dev/null && echo cloned")
			wantGit := "no-repository"
			if c.parentRepo {
				wantGit = "git-ok"
			}
			assert.Equal(t, c.dotGit+"\n"+wantGit+"\ncloned\n", res.Stdout.Text, res.Stderr.Text)
			if c.build {
				assert.Contains(t, res.Stderr.Text, "built and ran")
				st := stateOf(t, filepath.Join(w.ws, "hello"))
				assert.True(t, st.Mode.IsRegular() && st.Mode.Perm()&0o100 != 0, "%v", st.Mode)
				assert.EqualValues(t, o.uid, st.UID)
			}
			_, err := os.Lstat(filepath.Join(w.ws, ".git"))
			assert.ErrorIs(t, err, fs.ErrNotExist, "the workspace has a .git after the call")
		})
	}
}
