package toolexec

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/services/exec"
)

// readRefusals are the refusals a deny-read mask gives a read (issue 24):
// EACCES from a file's mask (an empty file of mode 0000), ENOENT beneath a
// directory's mask (an empty directory), in the runtimes' spellings.
var readRefusals = []refusal{
	{name: "Permission denied", spellings: writeRefusals[1].spellings},
	{name: "No such file or directory", spellings: []string{
		"No such file or directory", "no such file or directory", "ENOENT", "[Errno 2]", "os error 2", "NoSuchFileException", "FileNotFoundException",
	}},
}

// readDenial is one inferred refusal of a read by the deny-read masks.
type readDenial struct {
	// refusal is the refusal's name, path the path as the line names it
	// (absolute, clean), denied what it resolves to on the host, rule the
	// deny-read rule that covers it.
	refusal, path, denied, rule string
	// landlock says Landlock's read rights hid it (exec.Confinement's
	// MaskedByLandlock), not a mask.
	landlock bool
}

// detail is the denial's sentence in the model-facing result.
func (d readDenial) detail() string {
	s := "(inferred: the command failed and its stderr reports " + strconv.Quote(d.refusal) + " on " + strconv.Quote(d.path)
	if d.denied != d.path {
		s += ", which is " + strconv.Quote(d.denied)
	}
	how := "a denied file reads as an empty file of mode 0000, a denied directory as empty"
	if d.landlock {
		how = "reading a denied file, or anything in a denied directory, fails with EACCES (the names in a denied directory can be listed)"
	}
	return s + ", a credential path the deny-read set hides from commands (" + d.rule + "): " + how +
		". Only the user can let one command read it, by allowing that exact command once under danger-full-access)"
}

// inferReadDenial reports whether the stderr of a failed command shows a
// deny-read mask refusing a read: a line holds a read refusal (EACCES,
// ENOENT) and names a path (see lineCandidates; relative ones taken
// beneath workdir) that exists on the host, lies at or beneath a path
// masked in the command's view (conf.Masked), and, resolved through its
// symlinks as the host sees it, is in the deployment's deny-read set. A
// command can print any line, so the inference only decides how the
// failure is reported, never what the command may do.
func (t *Tool) inferReadDenial(conf *exec.Confinement, req exec.Request, stderr string) (readDenial, bool) {
	if len(conf.Masked) == 0 {
		return readDenial{}, false
	}
	for line := range strings.SplitSeq(stderr, "\n") {
		for _, r := range readRefusals {
			at := index(line, r.spellings)
			if at < 0 {
				continue
			}
			for _, p := range lineCandidates(line, at) {
				if d, ok := t.deniedRead(conf.Masked, req.Workdir, p); ok {
					d.landlock = conf.MaskedByLandlock
					d.refusal = r.name
					return d, true
				}
			}
		}
	}
	return readDenial{}, false
}

// deniedRead reports whether p (relative to workdir) is a read the masks
// refused: it exists on the host, its host path (symlinks resolved) lies
// at or beneath one of masked and the deny-read set denies it.
func (t *Tool) deniedRead(masked []string, workdir, p string) (readDenial, bool) {
	if strings.HasPrefix(p, "~") || strings.Contains(p, "://") {
		return readDenial{}, false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(workdir, p)
	}
	p = filepath.Clean(p)
	canon, err := filepath.EvalSymlinks(p)
	if err != nil {
		return readDenial{}, false // missing on the host: not the mask's doing
	}
	if !slices.ContainsFunc(masked, func(m string) bool { return dirfd.Beneath(m, canon) }) {
		return readDenial{}, false
	}
	info, err := os.Stat(canon)
	if err != nil {
		return readDenial{}, false
	}
	rule, ok := t.deps.Policy.DenyRead().Denied(canon, info.IsDir())
	if !ok {
		return readDenial{}, false
	}
	return readDenial{path: p, denied: canon, rule: rule}, true
}

// readTargets returns the deny-read paths command names (canonical, each
// once, in order; a directory's with a trailing slash): each word of it,
// stripped of quotes and punctuation, `~/` taken as home (the HOME the
// command gets), a relative one beneath workdir, that exists on the host
// and, resolved through its symlinks, is in the deny-read set, or lies
// beneath a denied directory. These are what the approval prompt of a
// danger-full-access escalation names as a credential read, and what an
// approval given once lifts (exec.Request.LiftedReads): a file's content,
// a directory's listing only (issue 35: a word naming ~/.ssh makes no key
// in it readable). A word the shell would expand (`~/.ssh/*`) names
// nothing.
func (t *Tool) readTargets(command, workdir, home string) []string {
	d := t.deps.Policy.DenyRead()
	var out []string
	for _, w := range strings.Fields(command) {
		w = trim(w)
		if i := strings.LastIndexByte(w, '='); i >= 0 && !strings.HasPrefix(w, "/") {
			w = w[i+1:] // --file=PATH, VAR=PATH
		}
		switch {
		case w == "" || strings.Contains(w, "://"):
			continue
		case (w == "~" || strings.HasPrefix(w, "~/")) && filepath.IsAbs(home):
			w = filepath.Join(home, w[1:])
		case strings.HasPrefix(w, "~"):
			continue
		case !filepath.IsAbs(w):
			w = filepath.Join(workdir, w)
		}
		canon, err := filepath.EvalSymlinks(filepath.Clean(w))
		if err != nil {
			continue
		}
		info, err := os.Stat(canon)
		if err != nil {
			continue
		}
		if info.IsDir() {
			canon += "/"
		}
		if _, ok := d.Denied(strings.TrimSuffix(canon, "/"), info.IsDir()); ok && !slices.Contains(out, canon) {
			out = append(out, canon)
		}
	}
	return out
}

// commandHome is the HOME a command in workspace gets, for its `~`: the
// server's own ($HOME), or under a root server the workspace owner's from
// the user database (a root server runs commands as that owner); "" when
// unknown.
func commandHome(workspace string) string {
	if os.Geteuid() != 0 {
		return os.Getenv("HOME")
	}
	var st syscall.Stat_t
	if workspace == "" || syscall.Stat(workspace, &st) != nil || st.Uid == 0 {
		return os.Getenv("HOME")
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10))
	if err != nil {
		return ""
	}
	return u.HomeDir
}
