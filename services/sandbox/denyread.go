package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// DenyReadDefaults returns the deny-read patterns in force unless
// --allow-read drops one by its spelling (issue 24): the usual credential
// stores in a home directory (`~` is each home DenyReadOptions.Homes names),
// harness's own configuration and state, and a project's environment files
// at any depth (`.env`, `.env.*`; the `.env.example`, `.env.sample`,
// `.env.template` and `.env.dist` templates stay readable), which hold a
// deployment's secrets more often than not.
func DenyReadDefaults() []string {
	return []string{
		"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube",
		"~/.docker/config.json", "~/.netrc", "~/.git-credentials", "~/.config/gh",
		"~/.npmrc", "~/.pypirc", "~/.cargo/credentials*",
		"~/.config/harness", "~/.local/state/harness",
		".env", ".env.*", "!.env.example", "!.env.sample", "!.env.template", "!.env.dist",
	}
}

// DenyReadOptions configure NewDenyRead.
type DenyReadOptions struct {
	// Patterns are added to the defaults (--deny-read).
	Patterns []string
	// Allow are defaults left out, each spelled as DenyReadDefaults
	// spells it (--allow-read).
	Allow []string
	// Homes are the absolute home directories `~` stands for: the server
	// user's, and under a root server the workspace owner's too. None:
	// a `~` pattern denies nothing.
	Homes []string
	// Files are absolute paths denied exactly, with everything beneath
	// them (harness's configuration file, its state directory).
	Files []string
}

// DenyRead is the set of paths neither tool family reads (issue 24): the
// defaults less --allow-read, the --deny-read patterns, and harness's own
// files. A pattern is gitignore-style, matched against the absolute path:
// `~/x` and `/abs/x` are anchored (one absolute pattern per home for `~`),
// a slash-free pattern (`.env`, `*.pem`, `secrets/`) and a `**/` one
// match at any depth, and `!pattern` exempts what an earlier one denies.
// Matching a directory denies everything beneath it. It holds in every
// mode; only an approval of exactly one read lifts it for that read. It is
// data plus predicates: the file fence decides on the opened descriptor's
// path and identity, the command runner masks what exists.
type DenyRead struct {
	rules []denyRule
	files []string
	homes []string
}

// denyRule is one pattern in force, expanded once per home.
type denyRule struct {
	spelling string   // as given, e.g. "~/.ssh"
	flag     string   // "default" or "--deny-read"
	expanded []string // the absolute (or slash-free) patterns it stands for
	parsed   []gitignore.Pattern
	filters  []prefilter // one per parsed pattern
	exempt   bool
}

// NewDenyRead returns the deny-read set of o. Errors: a blank pattern, a
// comment, a NUL byte, a malformed glob, `~user`, a relative pattern with a
// slash inside (ambiguous: write `/abs/path`, `~/path` or `**/dir/file`),
// a relative home or file, and an Allow entry that is no default (the error
// lists them).
func NewDenyRead(o DenyReadOptions) (DenyRead, error) {
	for _, h := range o.Homes {
		if !filepath.IsAbs(h) {
			return DenyRead{}, fmt.Errorf("home directory %q is not an absolute path", h)
		}
	}
	defaults := DenyReadDefaults()
	drop := map[string]bool{}
	for _, a := range o.Allow {
		a = strings.TrimSpace(a)
		if !slices.Contains(defaults, a) || strings.HasPrefix(a, "!") {
			return DenyRead{}, fmt.Errorf("--allow-read %q names no default deny-read pattern; the defaults are %s",
				a, strings.Join(slices.DeleteFunc(slices.Clone(defaults), func(d string) bool { return strings.HasPrefix(d, "!") }), ", "))
		}
		drop[a] = true
	}
	d := DenyRead{homes: slices.Clone(o.Homes)}
	add := func(spelling, flag string) error {
		r, err := newDenyRule(spelling, flag, o.Homes)
		if err != nil {
			return fmt.Errorf("deny-read pattern %q: %w", spelling, err)
		}
		d.rules = append(d.rules, r)
		return nil
	}
	for _, p := range defaults {
		if drop[p] {
			continue
		}
		if err := add(p, "default"); err != nil {
			return DenyRead{}, err
		}
	}
	for _, p := range o.Patterns {
		if err := add(p, "--deny-read"); err != nil {
			return DenyRead{}, err
		}
	}
	for _, f := range o.Files {
		if !filepath.IsAbs(f) {
			return DenyRead{}, fmt.Errorf("deny-read file %q is not an absolute path", f)
		}
		d.files = append(d.files, filepath.Clean(f))
	}
	return d, nil
}

// newDenyRule parses one pattern, expanding `~` once per home.
func newDenyRule(p, flag string, homes []string) (denyRule, error) {
	if err := checkPattern(p); err != nil {
		return denyRule{}, err
	}
	r := denyRule{spelling: p, flag: flag}
	body := p
	if strings.HasPrefix(body, "!") {
		r.exempt, body = true, body[1:]
	}
	var expanded []string
	switch {
	case body == "~" || strings.HasPrefix(body, "~/"):
		for _, h := range homes {
			expanded = append(expanded, filepath.ToSlash(filepath.Join(h, body[1:]))+trailingSlash(body))
		}
	case strings.HasPrefix(body, "~"):
		return denyRule{}, errors.New("~user is not supported: write the home directory out, e.g. /home/user/.ssh")
	case strings.HasPrefix(body, "/"), strings.HasPrefix(body, "**/"), !strings.Contains(strings.TrimSuffix(body, "/"), "/"):
		expanded = []string{body}
	default:
		return denyRule{}, errors.New("a relative pattern with a slash is ambiguous: write /abs/path, ~/path, or **/dir/file for any depth")
	}
	for _, e := range expanded {
		if r.exempt {
			e = "!" + e
		}
		r.expanded = append(r.expanded, e)
		r.parsed = append(r.parsed, gitignore.ParsePattern(e, nil))
		r.filters = append(r.filters, newPrefilter(strings.TrimPrefix(e, "!")))
	}
	return r, nil
}

// trailingSlash returns "/" when p ends in one (a pattern for directories
// only), which filepath.Join drops.
func trailingSlash(p string) string {
	if len(p) > 1 && strings.HasSuffix(p, "/") {
		return "/"
	}
	return ""
}

// Empty reports whether d denies nothing.
func (d DenyRead) Empty() bool {
	return len(d.files) == 0 && !slices.ContainsFunc(d.rules, func(r denyRule) bool { return !r.exempt && len(r.parsed) > 0 })
}

// Denied reports whether the absolute, clean path is denied, or lies
// beneath a denied directory, and names the rule ("~/.ssh (default)",
// "*.pem (--deny-read)", "harness's own file /etc/harness.yaml"). isDir
// says whether the entry itself is a directory (for patterns ending in a
// slash). Ancestors are checked first, so an exemption never re-allows
// what lies beneath a denied directory (as git never re-includes a file
// whose directory is excluded).
func (d DenyRead) Denied(path string, isDir bool) (rule string, ok bool) {
	parts, rule, done := d.prepare(path)
	if done {
		return rule, rule != ""
	}
	for i := 1; i <= len(parts); i++ {
		if rule, ok := d.match(parts[:i], i < len(parts) || isDir); ok {
			return rule, true
		}
	}
	return "", false
}

// DeniedEntry is Denied for a path whose parent directory is known not to
// be denied (a tree walk that decided each directory it entered): only the
// path itself is matched, so its cost does not grow with its depth.
func (d DenyRead) DeniedEntry(path string, isDir bool) (rule string, ok bool) {
	parts, rule, done := d.prepare(path)
	if done {
		return rule, rule != ""
	}
	return d.match(parts, isDir)
}

// prepare is what Denied and DeniedEntry share: done with the rule ("" for
// none) when path is relative, "/", one of harness's own files or beneath
// one, or there are no patterns; else the clean path's components.
func (d DenyRead) prepare(path string) (parts []string, rule string, done bool) {
	if !filepath.IsAbs(path) {
		return nil, "", true
	}
	path = filepath.Clean(path)
	for _, f := range d.files {
		if path == f || strings.HasPrefix(path, f+"/") {
			return nil, "harness's own file " + f, true
		}
	}
	if path == "/" || len(d.rules) == 0 {
		return nil, "", true
	}
	return strings.Split(path[1:], "/"), "", false
}

// match returns the rule deciding path: the last pattern that matches it,
// when that pattern denies rather than exempts.
func (d DenyRead) match(path []string, isDir bool) (string, bool) {
	for i := len(d.rules) - 1; i >= 0; i-- {
		r := d.rules[i]
		for j, p := range r.parsed {
			if !r.filters[j].mayMatch(path) {
				continue
			}
			switch p.Match(path, isDir) {
			case gitignore.Exclude:
				return r.spelling + " (" + r.flag + ")", true
			case gitignore.Include:
				return "", false
			}
		}
	}
	return "", false
}

// Anchored returns the absolute patterns in force that deny (each `~`
// pattern once per home, then the exact files), which may hold glob
// characters: what a runner expands to find the denied paths that exist.
// A path they yield is still to be checked with Denied (an exemption may
// re-allow it).
func (d DenyRead) Anchored() []string {
	rules := d.AnchoredRules()
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Pattern
	}
	return out
}

// AnchoredPattern is one pattern of Anchored with the rule it comes from,
// spelled as Denied names it ("~/.ssh (default)", "harness's own file
// /etc/harness.yaml").
type AnchoredPattern struct {
	Pattern string
	Rule    string
}

// AnchoredRules returns Anchored's patterns, in the same order, each with
// its rule.
func (d DenyRead) AnchoredRules() []AnchoredPattern {
	var out []AnchoredPattern
	for _, r := range d.rules {
		if r.exempt {
			continue
		}
		for _, e := range r.expanded {
			if strings.HasPrefix(e, "/") {
				out = append(out, AnchoredPattern{Pattern: strings.TrimSuffix(e, "/"), Rule: r.spelling + " (" + r.flag + ")"})
			}
		}
	}
	for _, f := range d.files {
		out = append(out, AnchoredPattern{Pattern: f, Rule: "harness's own file " + f})
	}
	return out
}

// AnyDepth returns the patterns in force that deny at any depth (`.env`,
// `**/secrets/`): what a runner looks for while it walks the trees it
// shows a command (the workspace roots). Empty when every pattern is
// anchored.
func (d DenyRead) AnyDepth() []string {
	var out []string
	for _, r := range d.rules {
		if r.exempt {
			continue
		}
		for _, e := range r.expanded {
			if !strings.HasPrefix(e, "/") {
				out = append(out, e)
			}
		}
	}
	return out
}

// Describe returns the deny-read set as `harness policy` lists it: each
// pattern in force with where it comes from (the defaults say how to drop
// them), then the exact files.
func (d DenyRead) Describe() []string {
	out := make([]string, 0, len(d.rules)+len(d.files))
	for _, r := range d.rules {
		line := r.spelling
		switch {
		case r.exempt:
			line += " (readable: exempt from the patterns before it)"
		case r.flag == "default":
			line += " (default; --allow-read " + r.spelling + " to allow)"
		default:
			line += " (" + r.flag + ")"
		}
		out = append(out, line)
	}
	for _, f := range d.files {
		out = append(out, f+" (harness's own file)")
	}
	return out
}

// Homes returns the home directories `~` stands for in the patterns (the
// DenyReadOptions.Homes it was built with), for `harness policy`; none
// means a `~` pattern denies nothing.
func (d DenyRead) Homes() []string { return slices.Clone(d.homes) }

// ReadDenialMarker is the model-facing line of a read the deny-read set
// refused under mode m (issue 24):
// `[sandbox: read access denied under <mode> mode]`.
func ReadDenialMarker(m Mode) string {
	return "[sandbox: read access denied under " + string(m) + " mode]"
}
