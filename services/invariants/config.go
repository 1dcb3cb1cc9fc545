package invariants

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Config selects which packages' invariants are checked (I-01..I-06).
type Config struct {
	// Enabled turns checking on. The zero value is off: the binary checks
	// invariants only with --invariants (a Go-port decision; the original
	// defaults to on).
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Allow lists RE2 patterns, unanchored and case-sensitive, matched
	// against a package's import path; empty admits every package.
	Allow []string `yaml:"allow" json:"allow"`
	// Block lists patterns that exclude a package; block wins over allow.
	Block []string `yaml:"block" json:"block"`
}

// compiled is a validated Config.
type compiled struct {
	enabled      bool
	allow, block []*regexp.Regexp
}

// compile validates the lists (I-06): every entry non-blank, without
// surrounding whitespace, unique within its list, and a valid RE2 pattern.
func (cfg Config) compile() (compiled, error) {
	allow, err := compileList("Allow", cfg.Allow)
	if err != nil {
		return compiled{}, err
	}
	block, err := compileList("Block", cfg.Block)
	if err != nil {
		return compiled{}, err
	}
	return compiled{enabled: cfg.Enabled, allow: allow, block: block}, nil
}

func compileList(field string, entries []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(entries))
	for i, e := range entries {
		if strings.TrimSpace(e) == "" || strings.TrimSpace(e) != e {
			return nil, fmt.Errorf("invariants: %s entries must be non-blank and have no surrounding whitespace", field)
		}
		if slices.Contains(entries[:i], e) {
			return nil, fmt.Errorf("invariants: %s contains duplicate regex %q", field, e)
		}
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("invariants: %s contains invalid regex %q: %w", field, e, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// selects reports whether pkg's invariants run (I-02): enabled, admitted by
// the allow list (or the list is empty), and matched by no block entry.
func (c compiled) selects(pkg string) bool {
	if !c.enabled {
		return false
	}
	if slices.ContainsFunc(c.block, func(re *regexp.Regexp) bool { return re.MatchString(pkg) }) {
		return false
	}
	return len(c.allow) == 0 || slices.ContainsFunc(c.allow, func(re *regexp.Regexp) bool { return re.MatchString(pkg) })
}
