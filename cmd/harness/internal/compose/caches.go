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
// commands names (commandEnv).
func ToolchainCaches(cfg config.Config) []toolchaincache.Cache {
	if !cfg.ToolchainCaches {
		return nil
	}
	return toolchaincache.Existing(commandEnv(cfg))
}

// commandEnv is the environment of cfg's commands, where their toolchains
// find their caches. Under --exec sandbox that is a confined command's
// (execsandbox.CommandEnv for the workspace root, --workspace else the
// working directory: a root server whose workspace belongs to another user
// runs commands as that user, so the caches are beneath that user's HOME);
// otherwise the server's, as a plain command gets it.
func commandEnv(cfg config.Config) []string {
	if cfg.Exec == "sandbox" {
		root := cfg.Workspace
		if root == "" {
			root, _ = os.Getwd() // unknown: the server's own user
		}
		return execsandbox.CommandEnv(root, cfg.ExecEnv)
	}
	return exec.Environ(cfg.ExecEnv, os.Getenv)
}
