package sandbox

import (
	"path"
	"strings"
)

// GitConfigRuns reports whether the git configuration key (as `git config
// --list` prints it: section and key in lower case, a subsection as
// written, "diff.<driver>.textconv") names a program or a command git runs,
// or changes where git reads configuration or how it reaches a remote in a
// way that can run one (issue 36: a repository a command made cannot carry
// anything the host's git would execute). The list is git-config(1)'s
// keys that take a command, a program or a path to one, with
// include.path and includeIf (another file's keys), url.*.insteadOf and
// protocol.*.allow (an `ext::` remote runs its command), remote.*.vcs (a
// git-remote-<vcs> helper), alias.* (`!` aliases run the shell), and
// trace2.* (files git writes wherever they name). Add a key here.
func GitConfigRuns(key string) bool {
	k := strings.ToLower(key)
	section, rest, ok := strings.Cut(k, ".")
	if !ok {
		return false
	}
	name := rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		name = rest[i+1:]
	}
	for _, pattern := range gitConfigRunTable {
		s, n, _ := strings.Cut(pattern, ".")
		if s != section {
			continue
		}
		if ok, _ := path.Match(n, name); ok {
			return true
		}
	}
	return false
}

// gitConfigRunTable is the list GitConfigRuns matches: "section.key", the
// key a path.Match pattern ("*": every key of the section), any
// subsection.
var gitConfigRunTable = []string{
	"core.fsmonitor", "core.hookspath", "core.sshcommand", "core.askpass", "core.editor", "core.pager",
	"core.gitproxy", "core.alternaterefscommand",
	"sequence.editor", "diff.external", "diff.textconv", "diff.command",
	"merge.driver", "mergetool.cmd", "mergetool.path", "difftool.cmd", "difftool.path",
	"filter.clean", "filter.smudge", "filter.process",
	"credential.helper", "gpg.program", "uploadpack.packobjectshook", "web.browser", "interactive.difffilter",
	"include.path", "includeif.path", "url.insteadof", "url.pushinsteadof", "protocol.allow",
	"remote.uploadpack", "remote.receivepack", "remote.vcs", "remote.proxy",
	"browser.cmd", "browser.path", "man.cmd", "man.path", "submodule.update",
	"sendemail.sendmailcmd", "sendemail.smtpserver", "sendemail.tocmd", "sendemail.cccmd",
	"alias.*", "pager.*", "trace2.*",
}
