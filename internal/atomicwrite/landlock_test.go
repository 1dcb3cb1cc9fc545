//go:build linux

package atomicwrite

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/landlock"
)

// Publication runs on a thread whose Landlock domain allows writes beneath
// the root only: the unnamed file, its link from /proc/self/fd, the
// temporary name's rename and the staging fallback are all writes beneath
// the target's directory, which the domain admits.
func TestWrite_UnderALandlockDomain(t *testing.T) {
	exec, err := landlock.New(landlock.Config{})
	if ue, ok := errors.AsType[*landlock.UnavailableError](err); ok {
		t.Skipf("Landlock is unavailable here: %v", ue)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = exec.Close() })
	forEachParent(t, []string{"b.txt: old\n"}, func(t *testing.T, e env) {
		for _, pb := range publications {
			err := exec.Run(context.Background(), []string{e.root}, func() error {
				_, err := Write(context.Background(), Request{Parent: e.p, Name: pb.name + ".txt", Content: "x", Publication: pb.pub, noUnnamed: e.staged})
				return err
			})
			require.NoError(t, err, pb.name)
			assertFile(t, e.dir+"/"+pb.name+".txt", "x", newPerm)
		}
		err := exec.Run(context.Background(), []string{e.root}, func() error {
			_, err := Write(context.Background(), Request{Parent: e.p, Name: "b.txt", Content: "new\n", noUnnamed: e.staged})
			return err
		})
		require.NoError(t, err)
		assertFile(t, e.dir+"/b.txt", "new\n", 0o644)

		// Outside the domain's roots, the refusal is EACCES like a
		// directory's permission, and the in-place last resort is refused
		// by the same domain: the file is unchanged.
		elsewhere := t.TempDir()
		err = exec.Run(context.Background(), []string{elsewhere}, func() error {
			_, err := Write(context.Background(), Request{Parent: e.p, Name: "b.txt", Content: "escaped\n", noUnnamed: e.staged})
			return err
		})
		var de *DeniedError
		require.ErrorAs(t, err, &de)
		assertFile(t, e.dir+"/b.txt", "new\n", 0o644)
		noResidue(t, e)
	})
}
