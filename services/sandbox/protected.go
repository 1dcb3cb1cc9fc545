package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// MetadataNames are the names of version-control metadata, protected at any
// depth inside a writable root under workspace-write, existing or not: a
// `.git` directory or file (a gitdir pointer), `.hg`, `.jj`, `.svn`. Writing
// there turns a file write into code execution (a hook, core.fsmonitor in
// .git/config), so it takes an escalation.
func MetadataNames() []string { return []string{".git", ".hg", ".jj", ".svn"} }

// ProtectedPaths is the set of protected paths inside every writable root:
// version-control metadata (MetadataNames, split by VCS), the host-run
// files (HostRunFiles, less --unprotect) and the patterns the deployment
// adds (--protect), gitignore-style, relative to the root. The zero value
// protects the metadata only, wholly (VCSReadOnly), with no host-run
// files. It is data plus predicates: deciding where a mutation actually
// lands is the enforcing backend's; finding the repositories that exist (a
// directory shaped like one, the gitdir a `.git` file names) is the policy
// service's (sandboxpolicy.Service.ProtectedAt and ProtectedEntries), which
// both tool families ask.
type ProtectedPaths struct {
	vcs      VCS
	files    []string  // absolute paths protected exactly: the configuration file
	exes     []string  // and harness's own executable
	hostRun  []HostRun // the host-run files in force
	dirs     []string  // absolute host-run directories: $XDG_CONFIG_HOME's (or each home's .config's) git and fish
	listDirs bool      // Describe lists dirs: they are $XDG_CONFIG_HOME's
	patterns []string  // the host-run files' patterns, then the deployment's
	parsed   []gitignore.Pattern
	// literal maps the name of each pattern that is one plain name (no
	// glob, slash, negation or trailing space: it matches a path one of
	// whose components is that name) to its highest index in parsed, so
	// that a walk's entry is not put through filepath.Match once per
	// pattern (issue 34: that was nine tenths of a search of 100,000
	// files).
	literal map[string]int
	plain   []bool // plain[i]: parsed[i] is such a name
}

// ProtectOptions configure NewProtectedPaths.
type ProtectOptions struct {
	// Patterns are gitignore patterns added to the defaults (--protect).
	Patterns []string
	// Unprotect are names of HostRunFiles left out (--unprotect), each
	// with or without a trailing slash.
	Unprotect []string
	// VCS is how version-control metadata is protected; "" means
	// VCSCommit.
	VCS VCS
	// ConfigFile is the absolute, canonical path of harness's own
	// configuration file ("" for none), protected where it lies inside a
	// writable root.
	ConfigFile string
	// Executables are the absolute, canonical paths of harness's own
	// executable (the running binary, and the file the command that
	// started it names), protected where they lie inside a writable root:
	// a client starts that file again, unconfined.
	Executables []string
	// ConfigHome is $XDG_CONFIG_HOME, absolute and canonical ("" when it
	// is unset or relative): git and fish read their settings there
	// instead of `~/.config`, so each host-run file beneath `.config/` in
	// force (git, fish) is protected there too, exactly where it lies
	// inside a writable root (HostRunDir), and `harness policy` lists it.
	ConfigHome string
	// Homes are the home directories whose `.config` git and fish read
	// when ConfigHome is "": the same directories are protected there
	// (a workspace that is `~/.config` itself, a dotfiles repository,
	// where the any-depth `.config/git` pattern does not reach).
	Homes []string
}

// NewProtectedPaths returns the protected paths of o: the metadata, the
// host-run files but those o.Unprotect names, and o.Patterns. A pattern is
// a gitignore pattern (`*.pem`, `secrets/`, `/deploy/**`, `!keep.txt` to
// exempt a name an earlier pattern protects) matched against the path
// relative to the workspace root; matching a directory protects everything
// beneath it. Errors: an empty or blank pattern, a comment (a leading #), a
// NUL byte, or a malformed glob (the error names the pattern); an
// Unprotect name that is no host-run file (the error lists them); an
// unknown VCS.
func NewProtectedPaths(o ProtectOptions) (ProtectedPaths, error) {
	vcs := o.VCS
	if vcs == "" {
		vcs = VCSCommit
	}
	if !vcs.Valid() {
		return ProtectedPaths{}, fmt.Errorf("unknown vcs setting %q: allowed values are %s, %s", string(vcs), VCSCommit, VCSReadOnly)
	}
	hostRun, err := hostRunLess(o.Unprotect)
	if err != nil {
		return ProtectedPaths{}, err
	}
	p := ProtectedPaths{vcs: vcs, hostRun: hostRun}
	if o.ConfigFile != "" {
		if !filepath.IsAbs(o.ConfigFile) {
			return ProtectedPaths{}, fmt.Errorf("the configuration file %q is not an absolute path", o.ConfigFile)
		}
		p.files = []string{filepath.Clean(o.ConfigFile)}
	}
	for _, e := range o.Executables {
		if !filepath.IsAbs(e) {
			return ProtectedPaths{}, fmt.Errorf("harness's executable %q is not an absolute path", e)
		}
		if e = filepath.Clean(e); !slices.Contains(p.exes, e) {
			p.exes = append(p.exes, e)
		}
	}
	configHomes := []string{o.ConfigHome}
	if o.ConfigHome == "" {
		configHomes = nil
		for _, h := range o.Homes {
			configHomes = append(configHomes, filepath.Join(h, ".config"))
		}
	}
	for _, c := range configHomes {
		if !filepath.IsAbs(c) {
			return ProtectedPaths{}, fmt.Errorf("the configuration home %q is not an absolute path", c)
		}
	}
	p.listDirs = o.ConfigHome != ""
	for _, h := range hostRun {
		p.add(h.pattern())
		if rest, ok := strings.CutPrefix(h.Name, ".config/"); ok {
			for _, c := range configHomes {
				p.dirs = append(p.dirs, filepath.Join(filepath.Clean(c), rest))
			}
		}
	}
	for _, pat := range o.Patterns {
		if err := checkPattern(pat); err != nil {
			return ProtectedPaths{}, fmt.Errorf("protected path pattern %q: %w", pat, err)
		}
		p.add(pat)
	}
	return p, nil
}

// add appends the pattern pat (checked).
func (p *ProtectedPaths) add(pat string) {
	plain := !strings.ContainsAny(pat, "*?[\\/!# ")
	if plain {
		if p.literal == nil {
			p.literal = map[string]int{}
		}
		p.literal[pat] = len(p.parsed)
	}
	p.plain = append(p.plain, plain)
	p.patterns = append(p.patterns, pat)
	p.parsed = append(p.parsed, gitignore.ParsePattern(pat, nil))
}

// hostRunLess returns HostRunFiles without those unprotect names, or an
// error naming one that is none of them.
func hostRunLess(unprotect []string) ([]HostRun, error) {
	all := HostRunFiles()
	drop := map[string]bool{}
	for _, u := range unprotect {
		name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(u), "/"), "/")
		if !slices.ContainsFunc(all, func(h HostRun) bool { return h.Name == name }) {
			names := make([]string, len(all))
			for i, h := range all {
				names[i] = h.Name
			}
			return nil, fmt.Errorf("--unprotect %q names no default protected path; the defaults are %s", u, strings.Join(names, ", "))
		}
		drop[name] = true
	}
	return slices.DeleteFunc(all, func(h HostRun) bool { return drop[h.Name] }), nil
}

// VCS returns how version-control metadata is protected.
func (p ProtectedPaths) VCS() VCS {
	if p.vcs == "" {
		return VCSReadOnly
	}
	return p.vcs
}

// ConfigFile reports whether path (clean, absolute) is harness's own
// configuration file, protected exactly where it lies inside a writable
// root.
func (p ProtectedPaths) ConfigFile(path string) bool { return slices.Contains(p.files, path) }

// Executable reports whether path (clean, absolute) is harness's own
// executable (ProtectOptions.Executables).
func (p ProtectedPaths) Executable(path string) bool { return slices.Contains(p.exes, path) }

// Files returns the absolute paths protected exactly: harness's
// configuration file, then its executables.
func (p ProtectedPaths) Files() []string { return slices.Concat(p.files, p.exes) }

// HostRunDirs returns the host-run directories protected exactly where
// they lie ($XDG_CONFIG_HOME/git and $XDG_CONFIG_HOME/fish, those of them
// in force, or without it each home's .config/git and .config/fish:
// ProtectOptions.ConfigHome and Homes), absolute.
func (p ProtectedPaths) HostRunDirs() []string { return slices.Clone(p.dirs) }

// HostRunDir reports whether path (clean, absolute) is one of HostRunDirs
// or lies beneath it, and returns that directory.
func (p ProtectedPaths) HostRunDir(path string) (string, bool) {
	for _, d := range p.dirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return d, true
		}
	}
	return "", false
}

// HostRun returns the host-run files in force (HostRunFiles less
// --unprotect; none for the zero value).
func (p ProtectedPaths) HostRun() []HostRun { return slices.Clone(p.hostRun) }

// checkPattern refuses what is not a usable gitignore pattern.
func checkPattern(p string) error {
	switch {
	case strings.TrimSpace(p) == "":
		return errors.New("empty")
	case strings.HasPrefix(p, "#"):
		return errors.New("a comment, not a pattern (escape a leading # as \\#)")
	case strings.ContainsRune(p, 0):
		return errors.New("contains a NUL byte")
	}
	for part := range strings.SplitSeq(strings.TrimPrefix(p, "!"), "/") {
		if _, err := filepath.Match(part, ""); err != nil {
			return err
		}
	}
	return nil
}

// Describe returns the protected paths as `harness policy` lists them: the
// metadata names (with the git members kept read-only under VCSCommit),
// the host-run files, then each --protect pattern.
func (p ProtectedPaths) Describe() []string {
	out := make([]string, 0, 4+len(p.patterns))
	for _, n := range MetadataNames() {
		if n == ".git" && p.VCS() == VCSReadOnly {
			out = append(out, ".git (at any depth, wholly: --vcs read-only)")
			continue
		}
		if n == ".git" {
			out = append(out, ".git (at any depth, and every git directory: config, config.worktree, hooks/, info/attributes, "+
				"objects/info/alternates, commondir, gitdir, remotes/, branches/, the same in worktrees/* and modules/*; the rest writable: --vcs commit)")
			continue
		}
		out = append(out, n+" (at any depth)")
	}
	for _, h := range p.hostRun {
		name := h.Name
		if h.Dir {
			name += "/"
		}
		where := "at any depth"
		if h.Top {
			where = "at the top of a writable root: it would make the root a git directory"
		}
		out = append(out, name+" (host-run file, "+where+"; --unprotect "+h.Name+" to allow)")
	}
	for _, pat := range p.patterns[len(p.hostRun):] {
		out = append(out, pat+" (--protect)")
	}
	for _, d := range p.dirs {
		if !p.listDirs {
			break // each home's .config/git and /fish: the any-depth patterns above name them
		}
		out = append(out, d+"/ (host-run directory: $XDG_CONFIG_HOME moves "+filepath.Base(d)+"'s settings there; --unprotect .config/"+filepath.Base(d)+" to allow)")
	}
	for _, f := range p.files {
		out = append(out, f+" (harness's configuration file)")
	}
	if len(p.exes) > 0 {
		out = append(out, "harness's own executable, where it lies inside a writable root (the file a client starts again)")
	}
	return out
}

// Protected reports whether the entry at rel, a clean slash-separated path
// relative to a writable root ("" or "." is the root itself), is a protected
// path or lies beneath one, and names the rule: the metadata name met (under
// VCSCommit, for `.git`, GitMember's rule for the path below it), the
// host-run file ("host-run file .mcp.json") or the pattern. isDir says
// whether the entry itself is a directory (for patterns ending in a slash).
// The root itself is never protected.
func (p ProtectedPaths) Protected(rel string, isDir bool) (rule string, ok bool) {
	if rel == "" || rel == "." {
		return "", false
	}
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if !slices.Contains(MetadataNames(), part) {
			continue
		}
		if part != ".git" || p.VCS() != VCSCommit {
			return part, true
		}
		if rule, ok := GitMember(parts[i+1:]); ok {
			if i+1 == len(parts) {
				return ".git", true
			}
			return rule + " in .git", true
		}
		break // a writable member of a .git: only the patterns below can protect it
	}
	// Check each ancestor first, so a pattern matching a directory protects
	// what is beneath it even when an exemption matches the entry (as git
	// never re-includes a file whose directory is excluded).
	for i := 1; i <= len(parts); i++ {
		if rule, ok := p.match(parts[:i], i < len(parts) || isDir); ok {
			return rule, true
		}
	}
	return "", false
}

// ProtectedEntry reports whether the entry at rel is protected when none of
// its ancestors is: what a walk that never enters a protected directory
// asks of each entry it meets. A `.git` is such an entry under either VCS
// setting (the policy service splits a repository's members under
// VCSCommit); otherwise it decides as Protected does, and allocates only
// when there are patterns to match.
func (p ProtectedPaths) ProtectedEntry(rel string, isDir bool) bool {
	if rel == "" || rel == "." {
		return false
	}
	if slices.Contains(MetadataNames(), rel[strings.LastIndexByte(rel, '/')+1:]) {
		return true
	}
	if len(p.parsed) == 0 {
		return false
	}
	_, ok := p.match(strings.Split(rel, "/"), isDir)
	return ok
}

// match returns the rule that decides path, from the last pattern that
// matches it, when that pattern protects rather than exempts.
func (p ProtectedPaths) match(path []string, isDir bool) (string, bool) {
	// The last plain-name pattern naming a component of path: the one
	// the loop below would find first among those patterns.
	lit := -1
	for _, c := range path {
		if i, ok := p.literal[c]; ok && i > lit {
			lit = i
		}
	}
	for i := len(p.parsed) - 1; i >= 0; i-- {
		if i > lit && p.plain[i] {
			continue // a plain name that is no component of path
		}
		switch p.parsed[i].Match(path, isDir) {
		case gitignore.Exclude:
			if i < len(p.hostRun) {
				return "host-run file " + p.hostRun[i].Name, true
			}
			return p.patterns[i], true
		case gitignore.Include:
			return "", false
		}
	}
	return "", false
}
