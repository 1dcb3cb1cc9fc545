package config

import "path/filepath"

// StateDir returns harness's state directory as getenv describes it:
// $XDG_STATE_HOME/harness when $XDG_STATE_HOME is absolute, else
// $HOME/.local/state/harness when $HOME is absolute, else "" (unknown). It
// holds the audit log and the journal; the deny-read defaults keep
// commands and the file tools out of it.
func StateDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "harness")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "harness")
	}
	return ""
}

// DefaultAuditLog returns the default audit log file: audit.jsonl in the
// state directory (StateDir), "" when that is unknown.
func DefaultAuditLog(getenv func(string) string) string {
	d := StateDir(getenv)
	if d == "" {
		return ""
	}
	return filepath.Join(d, "audit.jsonl")
}
