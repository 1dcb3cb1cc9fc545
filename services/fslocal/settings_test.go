package fslocal_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/internal/atomicwrite"
	"github.com/dsh-go/harness/services/fslocal"
)

// CoreSettings carries --durability and --workspace-owner into the core both
// backends mount (spec differences 9, 18): before, fssandbox converted the
// configuration itself and kept only Cwd and the diff bound, so
// `--durability atomic` still fsynced under the fence and a root-run server
// gave new files root's owner.
func TestCoreSettingsFollowTheConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  fslocal.Config
		want atomicwrite.Durability
		own  *atomicwrite.Owner
	}{
		{"zero value: full, the process's owner", fslocal.Config{Cwd: "/w"}, atomicwrite.Full, nil},
		{"full", fslocal.Config{Cwd: "/w", Durability: fslocal.DurabilityFull}, atomicwrite.Full, nil},
		{
			"atomic with a workspace owner",
			fslocal.Config{Cwd: "/w", Durability: fslocal.DurabilityAtomic, NewOwner: &fslocal.Owner{UID: 1000, GID: 1001}},
			atomicwrite.Atomic, &atomicwrite.Owner{UID: 1000, GID: 1001},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.cfg.CoreSettings()
			assert.Equal(t, c.want, s.Durability)
			assert.Equal(t, c.own, s.NewOwner)
			assert.Equal(t, "/w", s.Cwd)
		})
	}
}
