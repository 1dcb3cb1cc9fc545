package execsandbox

import (
	"testing"

	"github.com/dsh-go/harness/services/sandbox"
)

// BenchmarkRootSecrets is the walk a root-owned workspace's command pays at
// each start (rootSecrets over this host's system locations).
func BenchmarkRootSecrets(b *testing.B) {
	policy := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: b.TempDir()}
	for b.Loop() {
		masks, err := rootSecrets(b.Context(), policy, "/root", []uint32{0})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(masks)), "masks")
	}
}
