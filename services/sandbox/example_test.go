package sandbox_test

import (
	"fmt"

	"github.com/dsh-go/harness/services/sandbox"
)

// WritableRoots is the one definition of where a mutation may land: under
// workspace-write, the policy's workspace root and the temp roots; under
// any other mode, no list (read-only allows nothing, danger-full-access
// needs none).
func ExampleWritableRoots() {
	temps := []string{"/tmp", "/srv/project"}
	p := sandbox.ExecutionPolicy{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: "/srv/project"}
	fmt.Println(sandbox.WritableRoots(p, temps))
	p.Mode = sandbox.ReadOnly
	fmt.Println(len(sandbox.WritableRoots(p, temps)))
	fmt.Println(sandbox.DenialMarker(p.Mode))
	// Output:
	// [/srv/project /tmp]
	// 0
	// [sandbox: file access denied under read-only mode]
}
