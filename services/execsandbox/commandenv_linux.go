package execsandbox

import "github.com/dsh-go/harness/services/sandbox"

// CommandEnv returns the environment, as NAME=value pairs, that a confined
// command gets when its policy's workspace root is workspaceRoot and
// passthrough names the server variables passed to commands (exec.Config's
// Env): exec.Environ of the server's environment, except that a server
// running as root whose workspace root belongs to another user gives that
// user's HOME and USER, as Run does.
func CommandEnv(workspaceRoot string, passthrough []string) []string {
	_, env := commandUser(sandbox.ExecutionPolicy{WorkspaceRoot: workspaceRoot}, passthrough)
	return env
}
