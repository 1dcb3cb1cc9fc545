package toolexec

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// refusal is one kernel refusal of a write, with the spellings runtimes
// print it in: shells and coreutils, Python ([Errno N]), Node (the errno
// name), Go (lower case), Rust (os error N, the ErrorKind), Java.
type refusal struct {
	// name is how the detail quotes it.
	name string
	// landlock is true for the refusal Landlock gives (EACCES); false for
	// the one a read-only mount gives (EROFS).
	landlock bool
	// protectedOnly is true for a refusal that stands for the sandbox
	// only on a protected path: EBUSY, renaming onto a read-only member
	// bound in place (`git config` renames its lock onto .git/config).
	protectedOnly bool
	// reservedOnly is true for a refusal that stands for the sandbox only
	// on a path reserved while the command ran (exec.Confinement.Reserved:
	// a host-run name at the top of a root, held by a read-only
	// placeholder): EISDIR, writing it as a file; EEXIST, making it;
	// ENOTDIR, making it, or anything beneath it, a directory where a
	// named pipe holds it (beneath), and EACCES, writing that pipe (a
	// root's `.git` outside a repository). Anywhere else they are the
	// command's own errors.
	reservedOnly bool
	// beneath extends reservedOnly to the paths beneath a reserved one.
	beneath   bool
	spellings []string
}

// keeps reports whether d, a path the sandbox denies writing, is one r
// stands for under conf.
func (r refusal) keeps(conf *exec.Confinement, d fileDenial) bool {
	switch {
	case r.protectedOnly:
		return protected(d)
	case r.reservedOnly:
		return slices.ContainsFunc(conf.Reserved, func(p string) bool {
			return p == d.canon || (r.beneath && dirfd.Beneath(p, d.canon))
		})
	}
	return true
}

var writeRefusals = []refusal{
	{name: "Read-only file system", spellings: []string{
		"Read-only file system", "read-only file system", "EROFS", "[Errno 30]", "os error 30", "ReadOnlyFilesystem",
	}},
	{name: "Permission denied", landlock: true, spellings: []string{
		"Permission denied", "permission denied", "EACCES", "[Errno 13]", "os error 13", "AccessDeniedException",
	}},
	{name: "Device or resource busy", protectedOnly: true, spellings: []string{
		"Device or resource busy", "device or resource busy", "EBUSY", "[Errno 16]", "os error 16", "ResourceBusy",
	}},
	{name: "Is a directory", reservedOnly: true, spellings: []string{
		"Is a directory", "is a directory", "EISDIR", "[Errno 21]", "os error 21", "IsADirectory",
	}},
	{name: "File exists", reservedOnly: true, spellings: []string{
		"File exists", "file exists", "EEXIST", "[Errno 17]", "os error 17", "AlreadyExists",
	}},
	{name: "Not a directory", reservedOnly: true, beneath: true, spellings: []string{
		"Not a directory", "not a directory", "ENOTDIR", "[Errno 20]", "os error 20", "NotADirectory",
	}},
	{name: "Permission denied", reservedOnly: true, spellings: []string{
		"Permission denied", "permission denied", "EACCES", "[Errno 13]", "os error 13", "AccessDeniedException",
	}},
}

// quoted finds the paths tools quote in their messages: 'p', ‘p’, "p", `p`.
var quoted = regexp.MustCompile("'([^']+)'|‘([^’]+)’|\"([^\"]+)\"|`([^`]+)`")

// label matches a word before a refusal that is no path: an exception or
// error label (`Error: Permission denied`), an errno number.
var label = regexp.MustCompile(`^(\w*(Error|Exception|error)|\d+|Errno)$`)

// semaphore tells a POSIX semaphore's creation (sem_open, which makes a
// file in /dev/shm) in a failure that names no path.
var semaphore = regexp.MustCompile(`SemLock|sem_open`)

// fileDenial is one inferred refusal of a write.
type fileDenial struct {
	// refusal is the refusal's name, path the refused path (absolute,
	// clean), canon its canonical form (canonicalParent), boundary what
	// it crosses (sandboxpolicy.Boundary).
	refusal, path, canon, boundary string
	// named is false when the line with the refusal named no path and
	// path was found around it (the lines before, the command line).
	named bool
	// cache is the note when path lies in a toolchain's cache
	// (Tool.cacheNote), "" otherwise.
	cache string
}

// detail is the denial's sentence in the model-facing result.
func (d fileDenial) detail() string {
	if d.named {
		return "(inferred: the command failed and its stderr reports " +
			strconv.Quote(d.refusal) + " on " + strconv.Quote(d.path) + ", " + d.boundary + d.cache + ")"
	}
	return "(inferred: the command failed and its stderr reports " +
		strconv.Quote(d.refusal) + " naming no path; the command names " + strconv.Quote(d.path) + ", " + d.boundary + d.cache + ")"
}

// cacheNote is the note of a denial of p (canon its canonical form) that
// lies in one of the toolchains' caches (Config.ToolchainCaches): which
// tool's, and that --toolchain-caches makes the existing ones writable
// (or, with it on, that this one did not exist at the server's start);
// "" when p lies in none.
func (t *Tool) cacheNote(p, canon string) string {
	if t.cfg.ToolchainCaches == nil {
		return ""
	}
	for _, c := range t.cfg.ToolchainCaches() {
		roots := []string{c.Path}
		if r, err := filepath.EvalSymlinks(c.Path); err == nil && r != c.Path {
			roots = append(roots, r)
		}
		if !slices.ContainsFunc(roots, func(root string) bool { return dirfd.Beneath(root, p) || dirfd.Beneath(root, canon) }) {
			continue
		}
		if t.cfg.ToolchainCachesWritable {
			return "; it is " + c.Tool + "'s cache, which did not exist when the server started (--toolchain-caches makes the caches then existing writable)"
		}
		return "; it is " + c.Tool + "'s cache: the server's --toolchain-caches makes the toolchains' existing caches writable"
	}
	return ""
}

// inferFileDenial reports whether the output of a failed confined command
// shows the sandbox refusing a write: a line of stderr holds a write
// refusal this confinement gives (EROFS always; EACCES only when Landlock
// alone fences, conf.ReadOnlyMounts false) and a path the policy does not
// allow writing (outside the writable roots, a protected path, anything
// in read-only) that the command's user could write without the sandbox
// (writableUnconfined). The path is one the line names (quoted, the field
// before the refusal, or a word with a slash), taken relative to workdir;
// when no refusal line names a path with a slash, one around a refusal
// that names none (see around: cargo's "Caused by:", a semaphore, Rust's
// bare "Read-only file system (os error 30)"). A command can print any
// line, so a forged refusal counts only with such a path, and all the
// inference decides is whether to offer an escalation, never what the
// command may do.
func (t *Tool) inferFileDenial(policy sandbox.ExecutionPolicy, conf *exec.Confinement, req exec.Request, stderr string) (fileDenial, bool) {
	lines := strings.Split(stderr, "\n")
	type pathless struct {
		line    int
		refusal refusal
	}
	var bare []pathless
	namedAny := false
	for i, line := range lines {
		for _, r := range writeRefusals {
			if r.landlock && conf.ReadOnlyMounts {
				continue // a write outside was refused EROFS, not this
			}
			at := index(line, r.spellings)
			if at < 0 {
				continue
			}
			named := lineCandidates(line, at)
			if d, ok := t.firstDenied(policy, conf, req.Workdir, named, r); ok {
				d.refusal, d.named, d.cache = r.name, true, t.cacheNote(d.path, d.canon)
				return d, true
			}
			if slices.ContainsFunc(named, func(p string) bool { return strings.Contains(p, "/") }) {
				namedAny = true
			} else {
				bare = append(bare, pathless{i, r})
			}
		}
	}
	if namedAny {
		return fileDenial{}, false // the refusals name their paths, none denied
	}
	for _, b := range bare {
		if d, ok := t.firstDenied(policy, conf, req.Workdir, around(lines, b.line, stderr, req), b.refusal); ok {
			d.refusal, d.cache = b.refusal.name, t.cacheNote(d.path, d.canon)
			return d, true
		}
	}
	return fileDenial{}, false
}

// around returns the paths a refusal on line i that names none may be
// about: those the three lines before it name (nearest first; not stack
// frames), /dev/shm when stderr shows a semaphore being made, then the
// words with a slash of the command line, last first, except the programs
// it runs (existing executable files, relative ones beneath the workdir).
func around(lines []string, i int, stderr string, req exec.Request) []string {
	var out []string
	for j := i - 1; j >= max(0, i-3); j-- {
		if prev := lines[j]; !frame(prev) {
			out = append(out, quotedIn(prev)...)
			out = append(out, slashWords(prev)...)
		}
	}
	if semaphore.MatchString(stderr) {
		out = append(out, "/dev/shm")
	}
	words := slashWords(req.Command)
	slices.Reverse(words)
	for _, w := range words {
		p := w
		if !filepath.IsAbs(p) {
			p = filepath.Join(req.Workdir, p)
		}
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			continue
		}
		out = append(out, w)
	}
	return out
}

// firstDenied returns the first of paths (relative ones taken beneath
// workdir) that the sandbox denies writing under policy, that the command's
// user could write without it, and that r stands for (refusal.keeps).
func (t *Tool) firstDenied(policy sandbox.ExecutionPolicy, conf *exec.Confinement, workdir string, paths []string, r refusal) (fileDenial, bool) {
	for _, p := range paths {
		if strings.HasPrefix(p, "~") || strings.Contains(p, "://") {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(workdir, p)
		}
		p = filepath.Clean(p)
		if slices.Contains(subproc.DevicePaths, p) {
			continue // devices every command may write
		}
		canon := canonicalParent(p)
		b := t.deps.Policy.Boundary(policy, canon)
		if b == "" || !writableUnconfined(conf, canon) {
			continue
		}
		if d := (fileDenial{path: p, canon: canon, boundary: b}); r.keeps(conf, d) {
			return d, true
		}
	}
	return fileDenial{}, false
}

// protected reports whether d is about a protected path.
func protected(d fileDenial) bool {
	return strings.HasPrefix(d.boundary, sandboxpolicy.BoundaryProtected)
}

// index returns where the first of spellings occurs in line, -1 for none.
func index(line string, spellings []string) int {
	for _, s := range spellings {
		if i := strings.Index(line, s); i >= 0 {
			return i
		}
	}
	return -1
}

// lineCandidates returns the paths a line with a refusal at byte at names,
// most telling first: the last field of the text before the refusal
// (`cannot create x: Read-only file system` gives "x"; not a label), then
// the quoted strings that look like a path (a slash or a dot, no space: not
// the words a Rust debug print quotes) and the words with a slash, nearest
// the refusal first, those after it (Python, Node) before those before it
// (`cannot copy 'a' to 'b': ...` names b before a). Only those with a slash
// make the line count as naming its path.
func lineCandidates(line string, at int) []string {
	var out []string
	prefix := strings.TrimRight(line[:at], ":,( ")
	if i := strings.LastIndex(prefix, ": "); i >= 0 {
		prefix = prefix[i+2:]
	}
	if fields := strings.Fields(prefix); len(fields) > 0 {
		if f := trim(fields[len(fields)-1]); f != "" && !label.MatchString(f) {
			out = append(out, f)
		}
	}
	type found struct {
		pos  int
		path string
	}
	var all []found
	for _, m := range quoted.FindAllStringSubmatchIndex(line, -1) {
		for g := 2; g < len(m); g += 2 {
			if q := line[max(m[g], 0):max(m[g+1], 0)]; m[g] >= 0 && strings.ContainsAny(q, "/.") &&
				!strings.ContainsAny(q, " \t()") && !strings.Contains(q, "::") {
				all = append(all, found{m[g], q})
			}
		}
	}
	for _, m := range word.FindAllStringIndex(line, -1) {
		if w := trim(line[m[0]:m[1]]); strings.Contains(w, "/") {
			all = append(all, found{m[0], w})
		}
	}
	rank := func(pos int) int {
		if pos >= at {
			return pos - at
		}
		return len(line) + at - pos
	}
	slices.SortStableFunc(all, func(a, b found) int { return rank(a.pos) - rank(b.pos) })
	for _, f := range all {
		out = append(out, f.path)
	}
	return out
}

// word is a run of non-space characters.
var word = regexp.MustCompile(`\S+`)

// quotedIn returns the quoted strings of s.
func quotedIn(s string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(s, -1) {
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, g)
			}
		}
	}
	return out
}

// slashWords returns the words of s that hold a slash, stripped of the
// quotes and punctuation around them: the paths a message or a command
// line names unquoted.
func slashWords(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		if w = trim(w); strings.Contains(w, "/") {
			out = append(out, w)
		}
	}
	return out
}

// trim strips w of the quotes, brackets and punctuation around a path: a
// sentence's full stop, not the dots of "." or "..".
func trim(w string) string {
	w = strings.TrimRight(strings.Trim(w, "'\"`‘’()[]{}<>,;"), ":")
	if strings.HasSuffix(w, ".") && !strings.HasSuffix(w, "..") && !strings.HasSuffix(w, "/.") && w != "." {
		w = strings.TrimRight(w[:len(w)-1], ":")
	}
	return w
}

// frame reports whether line is a stack frame (Python's `File "..."`, a
// JavaScript or Java `at ...`, Rust's `panicked at src/x.rs:1:2`), whose paths are the program's, not what it
// wrote.
func frame(line string) bool {
	l := strings.TrimSpace(line)
	return strings.HasPrefix(l, "File \"") || strings.HasPrefix(l, "at ") || strings.Contains(l, "panicked at ")
}

// canonicalParent returns p with its longest existing prefix resolved
// (every symlink in it followed).
func canonicalParent(p string) string {
	rest := ""
	dir := p
	for dir != "/" {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = filepath.Dir(dir)
	}
	return filepath.Join(sandboxpolicy.CanonicalPath(dir), rest)
}
