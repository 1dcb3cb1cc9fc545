package execsandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
)

// A repository a command made (issue 36). Its git directory did not exist
// when the command started, so nothing of it was protected while the
// command ran: `git init vendor/lib` and a `core.fsmonitor` in its config
// would run that program as soon as the user's git (or an editor's) looks
// at vendor/lib. When the command ends the runner disarms each such
// repository: the keys of its config and config.worktree that run a
// program (sandbox.GitConfigRuns) are removed, a symlink or special file
// in their place is removed, and its hooks lose their execute bits (a
// symlinked hook, or a symlinked hooks/, is removed); git's own
// *.sample hooks are left alone. From the next command on, its members
// are protected like any repository's.

// disarmNewRepo disarms the git directory dir, made while the command ran,
// and reports what it did; gitDirs are every git directory known after the
// command (those found before it, and those found since, each disarmed).
func disarmNewRepo(ctx context.Context, dir string, gitDirs []string) []exec.DisarmedState {
	var out []exec.DisarmedState
	if d, ok := disarmCommondir(filepath.Join(dir, "commondir"), gitDirs); ok {
		out = append(out, d)
	}
	for _, name := range []string{"config", "config.worktree"} {
		if d, ok := disarmConfig(ctx, filepath.Join(dir, name)); ok {
			out = append(out, d)
		}
	}
	return append(out, disarmHooks(filepath.Join(dir, "hooks"))...)
}

// disarmCommondir removes the commondir file p of a git directory the
// command made unless it names one of gitDirs. git takes the config and
// hooks of the directory it names, so one naming a directory the command
// filled but not shaped like a repository (no HEAD: git does not need one
// there), which no search takes for a git directory and nothing disarms,
// ran its core.fsmonitor as soon as the user's git entered the new
// repository. A linked worktree's (`git worktree add`, of a repository that
// was there or that the command made) names a known one and stays.
func disarmCommondir(p string, gitDirs []string) (exec.DisarmedState, bool) {
	d := exec.DisarmedState{Path: p, Runs: "where git takes the configuration and hooks from"}
	content, present, done := readToDisarm(p, "its common directory", &d)
	if !present || done {
		return d, present
	}
	named := strings.TrimRight(string(content), "\r\n")
	target := named
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(p), target)
	}
	if resolved, err := filepath.EvalSymlinks(target); err == nil {
		for _, g := range gitDirs {
			if rg, err := filepath.EvalSymlinks(g); err == nil && rg == resolved {
				return d, false
			}
		}
	}
	d.Found = fmt.Sprintf("a common directory %q that is no git directory found in the writable roots", named)
	if len(d.Found) > 200 {
		d.Found = d.Found[:200]
	}
	d.Action = removeNoFollow(p)
	return d, true
}

// readToDisarm reads the file p of a git directory the command made, where
// git reads what, for the disarming d: present is false when there is none;
// a symlink or special file there, or one that cannot be read, is removed
// and d says so (done).
func readToDisarm(p, what string, d *exec.DisarmedState) (content []byte, present, done bool) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return nil, false, false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		d.Found = "a symlink or special file where git reads " + what
		d.Action = removeNoFollow(p)
		return nil, true, true
	}
	content, err := readNoFollow(p)
	if err != nil {
		d.Found = "a file that could not be checked (" + err.Error() + ")"
		d.Action = removeNoFollow(p)
		return nil, true, true
	}
	return content, true, false
}

// disarmConfig removes from the config file p the keys that run a program.
func disarmConfig(ctx context.Context, p string) (exec.DisarmedState, bool) {
	d := exec.DisarmedState{Path: p, Runs: "configuration keys that run a program"}
	content, present, done := readToDisarm(p, "its configuration", &d)
	if !present || done {
		return d, present
	}
	entries, err := gitConfigEntries(ctx, content)
	if err != nil {
		// git cannot read it: the user's git stops at it too, running
		// nothing (or git is not here to read it).
		return d, false
	}
	var kept, found []string
	for _, e := range entries {
		key, value, _ := strings.Cut(e, "\n")
		if sandbox.GitConfigRuns(key) {
			found = append(found, key+"="+value)
			continue
		}
		kept = append(kept, e)
	}
	if len(found) == 0 {
		return d, false
	}
	d.Found = strings.Join(found, "; ")
	if len(d.Found) > 200 {
		d.Found = d.Found[:200]
	}
	if err := rewriteNoFollow(p, renderGitConfig(kept)); err != nil {
		d.Action = "could not rewrite it without them (" + err.Error() + "); " + removeNoFollow(p)
	} else {
		d.Action = "those keys were removed"
	}
	return d, true
}

// gitConfigEntries parses content with git itself (`git config --list
// --null`, includes not followed): each "key\nvalue" (or "key" alone for a
// key without a value), in order. Errors: git is not installed, or cannot
// parse it.
func gitConfigEntries(ctx context.Context, content []byte) ([]string, error) {
	cmd := osexec.CommandContext(ctx, "git", "config", "--file", "-", "--no-includes", "--null", "--list")
	cmd.Stdin = bytes.NewReader(content)
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent", "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var entries []string
	for e := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if e != "" {
			entries = append(entries, e)
		}
	}
	return entries, nil
}

// renderGitConfig writes entries ("section[.subsection].key\nvalue", as
// gitConfigEntries returns them) back in git's config syntax, one section
// header each time the section changes, values quoted.
func renderGitConfig(entries []string) []byte {
	var b strings.Builder
	header := ""
	for _, e := range entries {
		key, value, hasValue := strings.Cut(e, "\n")
		section, rest, _ := strings.Cut(key, ".")
		sub, name := "", rest
		if i := strings.LastIndexByte(rest, '.'); i >= 0 {
			sub, name = rest[:i], rest[i+1:]
		}
		h := "[" + section + "]"
		if sub != "" {
			h = "[" + section + " " + quoteGitConfig(sub, false) + "]"
		}
		if h != header {
			b.WriteString(h + "\n")
			header = h
		}
		b.WriteString("\t" + name)
		if hasValue {
			b.WriteString(" = " + quoteGitConfig(value, true))
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// quoteGitConfig quotes s as git reads a subsection (backslash and double
// quote escaped) or a value (newline and tab too).
func quoteGitConfig(s string, value bool) string {
	r := []string{`\`, `\\`, `"`, `\"`}
	if value {
		r = append(r, "\n", `\n`, "\t", `\t`)
	}
	return `"` + strings.NewReplacer(r...).Replace(s) + `"`
}

// disarmHooks takes the execute bits from each hook in hooks (a new
// repository's) but git's *.sample ones, removes a symlinked hook, and a
// symlinked hooks/ itself.
func disarmHooks(hooks string) []exec.DisarmedState {
	var st unix.Stat_t
	if err := unix.Lstat(hooks, &st); err != nil {
		return nil
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return []exec.DisarmedState{{Path: hooks, Runs: "the hooks git runs", Found: "a symlink where git reads its hooks", Action: removeNoFollow(hooks)}}
	}
	names, err := readDirNoFollow(hooks)
	if err != nil {
		return nil
	}
	var out []exec.DisarmedState
	for _, n := range names {
		if strings.HasSuffix(n, ".sample") {
			continue
		}
		p := filepath.Join(hooks, n)
		if unix.Lstat(p, &st) != nil {
			continue
		}
		d := exec.DisarmedState{Path: p, Runs: "a hook git runs", Found: n}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			d.Action = removeNoFollow(p)
		case unix.S_IFREG:
			if st.Mode&0o111 == 0 {
				continue
			}
			d.Action = "its execute bits were cleared"
			if err := chmodNoFollow(p, st.Mode&0o7777&^0o111); err != nil {
				d.Action = "could not clear its execute bits (" + err.Error() + "); " + removeNoFollow(p)
			}
		default:
			continue
		}
		out = append(out, d)
	}
	return out
}

// chmodNoFollow sets the mode of the regular file p, reached without
// following a symlink.
func chmodNoFollow(p string, mode uint32) error {
	dfd, err := openParent(p)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(dfd) }()
	fd, err := unix.Openat(dfd, filepath.Base(p), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("not a regular file")
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	return nil
}
