package sandbox

import (
	"slices"
	"strings"
)

// VCS is how version-control metadata is protected under workspace-write
// (--vcs).
type VCS string

const (
	// VCSCommit (the default) lets both families record history in a git
	// repository (add, commit, branch, stash, tag, worktree add, fetch)
	// while what makes git run code or changes where it looks stays
	// read-only (GitMember).
	VCSCommit VCS = "commit"
	// VCSReadOnly keeps every `.git`, `.hg`, `.jj` and `.svn` wholly
	// read-only.
	VCSReadOnly VCS = "read-only"
)

// VCSValues returns the valid VCS settings, the default first.
func VCSValues() []VCS { return []VCS{VCSCommit, VCSReadOnly} }

// Valid reports whether v is a known setting; "" is not (callers apply the
// default first).
func (v VCS) Valid() bool { return v == VCSCommit || v == VCSReadOnly }

// HostRun is one file or directory that a program on the host runs or
// reads settings from when it starts in a directory (an agent's MCP
// servers and hooks, an editor's tasks, direnv, a shell's start-up files),
// so writing it from the sandbox turns into code run outside it.
type HostRun struct {
	// Name is the path relative to the directory it is read in: one
	// component, or a few separated by slashes (".config/fish").
	Name string
	// Dir says it is a directory (protected with everything beneath it).
	Dir bool
	// Top says it counts only at the top of a writable root, not at any
	// depth.
	Top bool
	// Home says only a home directory's copy is read (a shell's start-up
	// file, fish's configuration): protected wherever it exists, like
	// every host-run file, but reserved where missing only in a home
	// (sandboxpolicy.Reservable), not at the top of every workspace root.
	// Not git's: a user's ~/.gitconfig may include any file by path
	// (`[includeIf "gitdir:~/work/"] path = ~/work/.gitconfig`: the attack
	// review of issue 34).
	Home bool
}

// HostRunFiles returns the host-run files protected by default under
// workspace-write, at any depth inside every writable root (--unprotect
// drops one by Name), from hostRunTable, one entry a line, grouped by what
// reads it:
//   - agents' and MCP clients' project settings, which name MCP servers,
//     hooks, plugins or lint and test commands to start (.mcp.json,
//     .claude/, .codex/, .cursor/, .gemini/, .agents/, .zed/, opencode.json,
//     opencode.jsonc, .opencode/, .roo/, .kilocode/, .amazonq/, .continue/,
//     .junie/, .windsurf/, .kiro/, .qwen/, crush.json, .crush.json,
//     .aider.conf.yml): a client's whole directory where it keeps commands
//     in more than one file (Zed's tasks beside context_servers, opencode's
//     plugins beside its config, Amazon Q's agents' hooks beside mcp.json,
//     Continue's mcpServers/*.yaml beside its assistants, Junie's
//     mcp/mcp.json, Windsurf's hooks and workflows), and so that a missing
//     one is reserved at a workspace root's top (a name with a slash is
//     reserved where its parent exists, and where the parent is missing its
//     first component is: a command cannot make `.config` then);
//   - editors' and dev-container settings, which run tasks, extensions,
//     language servers or start-up scripts (.vscode/, .idea/,
//     .devcontainer/, .helix/, .nvim.lua, .nvimrc, .exrc);
//   - git hook managers' settings, whose hook installed in .git/hooks runs
//     the commands they name at the user's next git commit
//     (.pre-commit-config.yaml, lefthook.yml, .lefthook.yml);
//   - direnv's .envrc, run by the shell on entering the directory;
//   - .gitmodules, which names what `git submodule update` clones and where;
//   - git's and the shells' start-up files, read when the workspace is a
//     home directory (.gitconfig, .config/git/, .bashrc, .bash_profile,
//     .bash_login, .bash_logout, .profile, .zshrc, .zshenv, .zprofile,
//     .zlogin, .zlogout, .cshrc, .tcshrc, .login, .logout, .config/fish/;
//     Home, but git's: a missing one is reserved only in a home);
//   - a writable root's top-level HEAD (Top): with objects/ and refs/
//     beside it, it makes the root itself a git directory, whose config git
//     on the host would read once the root's .git is unusable.
func HostRunFiles() []HostRun { return slices.Clone(hostRunTable) }

// hostRunTable is the list HostRunFiles returns: add a client's file here
// (and to the list in HostRunFiles' comment and the top README's --protect
// row, which a test pins).
var hostRunTable = []HostRun{
	// Agents and MCP clients.
	{Name: ".mcp.json"},            // Claude Code: mcpServers
	{Name: ".claude", Dir: true},   // Claude Code: settings.json hooks, commands
	{Name: ".codex", Dir: true},    // Codex: config.toml mcp_servers
	{Name: ".cursor", Dir: true},   // Cursor: mcp.json, hooks.json
	{Name: ".gemini", Dir: true},   // Gemini CLI: settings.json mcpServers, hooks
	{Name: ".agents", Dir: true},   // shared agent settings
	{Name: ".zed", Dir: true},      // Zed: settings.json context_servers, tasks.json
	{Name: "opencode.json"},        // opencode: mcp local commands
	{Name: "opencode.jsonc"},       // opencode: the same, with comments
	{Name: ".opencode", Dir: true}, // opencode: its config and plugins (code it loads)
	{Name: ".roo", Dir: true},      // Roo Code: mcp.json
	{Name: ".kilocode", Dir: true}, // Kilo Code: mcp.json
	{Name: ".amazonq", Dir: true},  // Amazon Q: mcp.json, cli-agents/ hooks
	{Name: ".continue", Dir: true}, // Continue: mcpServers/*.yaml
	{Name: ".junie", Dir: true},    // Junie: mcp/mcp.json
	{Name: ".windsurf", Dir: true}, // Windsurf: hooks.json, workflows
	{Name: ".kiro", Dir: true},     // Kiro: settings/mcp.json, hooks/
	{Name: ".qwen", Dir: true},     // Qwen Code: settings.json mcpServers
	{Name: "crush.json"},           // Crush: mcp commands, lsp commands
	{Name: ".crush.json"},          // Crush: the same, hidden
	{Name: ".aider.conf.yml"},      // aider: lint-cmd, test-cmd
	// Editors and dev containers.
	{Name: ".vscode", Dir: true},
	{Name: ".idea", Dir: true},
	{Name: ".devcontainer", Dir: true},
	{Name: ".helix", Dir: true}, // Helix: languages.toml language-server commands
	{Name: ".nvim.lua"},         // Neovim's exrc: run when it starts in the directory
	{Name: ".nvimrc"},           // the same, older name
	{Name: ".exrc"},             // Vim's and Neovim's exrc
	// Git hook managers, whose installed hook (read-only in .git/hooks)
	// runs the commands these name at the user's git commit.
	{Name: ".pre-commit-config.yaml"}, // pre-commit: local hooks' entry
	{Name: "lefthook.yml"},            // lefthook: hook commands
	{Name: ".lefthook.yml"},           // lefthook: the same, hidden
	// Shells and git.
	{Name: ".envrc"},
	{Name: ".gitmodules"},
	{Name: ".gitconfig"},
	{Name: ".config/git", Dir: true},
	{Name: ".bashrc", Home: true},
	{Name: ".bash_profile", Home: true},
	{Name: ".bash_login", Home: true},
	{Name: ".bash_logout", Home: true},
	{Name: ".profile", Home: true},
	{Name: ".zshrc", Home: true},
	{Name: ".zshenv", Home: true},
	{Name: ".zprofile", Home: true},
	{Name: ".zlogin", Home: true},
	{Name: ".zlogout", Home: true},
	{Name: ".cshrc", Home: true},
	{Name: ".tcshrc", Home: true},
	{Name: ".login", Home: true},
	{Name: ".logout", Home: true},
	{Name: ".config/fish", Dir: true, Home: true},
	{Name: "HEAD", Top: true},
}

// pattern is h as a gitignore pattern matching it at any depth (at the
// root only when Top).
func (h HostRun) pattern() string {
	p := h.Name
	if h.Top {
		return "/" + p
	}
	if strings.Contains(p, "/") {
		p = "**/" + p
	}
	return p
}

// GitMember reports whether member, the path of an entry relative to a git
// directory (a `.git` directory, a bare repository, a linked worktree's or
// a submodule's gitdir) split into components, stays read-only under
// VCSCommit, and names it ("git hooks", "git config", ...). Read-only are
// what makes git run code or changes where it looks:
//   - config and config.worktree (core.fsmonitor, core.hooksPath, aliases,
//     filters, ...); hooks/ with everything beneath;
//   - info/attributes (filter and diff drivers);
//   - objects/info/alternates and objects/info/http-alternates (where
//     objects are read from);
//   - the commondir and gitdir pointer files;
//   - remotes/ and branches/ (remote URLs, as the old layout keeps them);
//   - the same, recursively, in each gitdir below worktrees/<id>/ and
//     modules/<name>/ (a submodule's name may hold slashes, so any suffix
//     of a path below modules/ counts).
//
// The git directory itself (an empty member) is read-only too: removing or
// renaming it is refused. Everything else (index, HEAD, refs, objects,
// logs, packed-refs, info/exclude, lock files, ...) is writable.
func GitMember(member []string) (string, bool) {
	if len(member) == 0 {
		return "a git directory", true
	}
	if rule, ok := gitTop(member); ok {
		return rule, true
	}
	switch member[0] {
	case "worktrees":
		if len(member) > 2 {
			return gitTop(member[2:])
		}
	case "modules":
		for i := 2; i < len(member); i++ {
			if rule, ok := gitTop(member[i:]); ok {
				return rule, true
			}
		}
	}
	return "", false
}

// gitTop is GitMember's rule for the members directly below one git
// directory (member is not empty).
func gitTop(member []string) (string, bool) {
	switch member[0] {
	case "config", "config.worktree":
		return "git config", true
	case "hooks":
		return "git hooks", true
	case "commondir", "gitdir":
		return "git pointer file " + member[0], true
	case "remotes", "branches":
		return "git remotes", true
	case "info":
		if len(member) > 1 && member[1] == "attributes" {
			return "git attributes", true
		}
	case "objects":
		if len(member) > 2 && member[1] == "info" && (member[2] == "alternates" || member[2] == "http-alternates") {
			return "git alternates", true
		}
	}
	return "", false
}
