//go:build linux

package undo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/journal"
)

// crashEnv makes the test binary the undoing process of
// TestUndo_SIGKILLMidRestore: "<journal dir>\n<change id>".
const crashEnv = "HARNESS_TEST_UNDO_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		dir, id, _ := strings.Cut(spec, "\n")
		j, err := journal.Open(journal.Options{Dir: dir, MaxBytes: 64 << 20, Sync: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		if _, err := New(j).Undo(context.Background(), id, Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// An undo killed (SIGKILL) while it restores a tree leaves its own entry
// pending and the journal readable; the disk decides: the change still
// counts as standing, and undoing it again with --force completes the
// restore byte for byte.
func TestUndo_SIGKILLMidRestore(t *testing.T) {
	w := newWS(t)
	specs := []string{"tree/"}
	for i := range 400 {
		specs = append(specs, fmt.Sprintf("tree/d%02d/f%03d: content %d", i%20, i, i))
	}
	w.build(specs...)
	prior := w.snap()
	e := w.change("s1", journal.Delete, func() { require.NoError(t, os.RemoveAll(w.path("tree"))) }, "tree")

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), crashEnv+"="+w.j.Dir()+"\n"+e.ID)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	var undo journal.Entry
	deadline := time.Now().Add(30 * time.Second)
	for undo.ID == "" && time.Now().Before(deadline) {
		all, err := w.j.List(journal.ListOptions{})
		require.NoError(t, err)
		for _, x := range all {
			if x.Kind == journal.Undo && x.Undoes == e.ID {
				undo = x
			}
		}
		time.Sleep(time.Millisecond)
	}
	require.NotEmpty(t, undo.ID, "the undo recorded itself before restoring")
	time.Sleep(5 * time.Millisecond)
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()

	all, err := w.j.List(journal.ListOptions{})
	require.NoError(t, err, "the journal reads after the kill")
	for _, x := range all {
		if x.ID == undo.ID {
			undo = x
		}
	}
	if undo.Status == journal.Applied {
		t.Log("the undo finished before the kill")
		assert.Equal(t, prior, w.snap())
		return
	}
	assert.Equal(t, journal.Pending, undo.Status)
	assert.Empty(t, UndoneBy(all)[e.ID], "a pending undo does not count")
	restored := len(w.snap())
	t.Logf("killed with %d of %d entries restored", restored, len(prior))

	_, err = w.u.Undo(ctx(), e.ID, Options{})
	if restored > 0 {
		assert.Equal(t, CodeChangedSince, code(err), "a tree restored before the kill is a change since: %v", err)
		_, err = w.u.Undo(ctx(), e.ID, Options{Force: true})
	}
	require.NoError(t, err)
	assert.Equal(t, prior, w.snap(), "restored byte for byte")
	_, err = os.Lstat(filepath.Join(w.root, "tree"))
	require.NoError(t, err)
}
