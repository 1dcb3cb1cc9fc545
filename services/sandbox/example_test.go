package sandbox_test

import (
	"fmt"

	"github.com/dsh-go/harness/services/sandbox"
)

// WritableRoots is the one definition of where a mutation may land: under
// workspace-write, the policy's workspace roots, its temp areas and its
// extra roots; under any other mode, no list (read-only allows nothing,
// danger-full-access needs none). Roots names them whatever the mode.
func ExampleExecutionPolicy_WritableRoots() {
	p := sandbox.ExecutionPolicy{
		Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/project",
		TempRoots: []string{"/tmp", "/srv/project"}, ExtraRoots: []string{"/var/cache/build"},
	}
	fmt.Println(p.WritableRoots())
	p.Mode = sandbox.ReadOnly
	fmt.Println(len(p.WritableRoots()), p.Roots())
	fmt.Println(p.Shared("/tmp"), p.Shared("/srv/project/sub"))
	fmt.Println(sandbox.DenialMarker(p.Mode))
	// Output:
	// [/srv/project /tmp /var/cache/build]
	// 0 [/srv/project /tmp /var/cache/build]
	// true false
	// [sandbox: file access denied under read-only mode]
}
