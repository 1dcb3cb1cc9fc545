package compose

import (
	"os"

	"github.com/dsh-go/harness/cmd/harness/internal/config"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/toolchaincache"
)

// ToolchainCaches returns the caches --toolchain-caches adds to the
// writable roots of cfg (validated): none when it is off; else the
// existing caches (toolchaincache.Existing) that the environment of the
// commands names. Under --exec sandbox that is a confined command's
// (execsandbox.CommandEnv for the workspace root, --workspace else the
// working directory: a root server whose workspace belongs to another user
// runs commands as that user, so the caches are beneath that user's HOME);
// otherwise the server's, as a plain command gets it.
func ToolchainCaches(cfg config.Config) []toolchaincache.Cache {
	if !cfg.ToolchainCaches {
		return nil
	}
	env := exec.Environ(cfg.ExecEnv, os.Getenv)
	if cfg.Exec == "sandbox" {
		root := cfg.Workspace
		if root == "" {
			root, _ = os.Getwd() // unknown: the server's own user
		}
		env = execsandbox.CommandEnv(root, cfg.ExecEnv)
	}
	return toolchaincache.Existing(env)
}
