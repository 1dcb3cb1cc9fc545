package principal

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

// maxFileBytes caps the principals file: a few lines per subject, so a
// megabyte is thousands of principals; more is a mistake, not a config.
const maxFileBytes = 1 << 20

// The keys of the file: one at the top, four per principal.
const (
	keyPrincipals = "principals"
	keyWorkspaces = "workspaces"
	keyMode       = "mode"
	keyWidest     = "widest-mode"
	keyMaxCalls   = "max-concurrent-calls"
)

// principalKeys are the keys a principal takes, for an unknown key's
// message.
var principalKeys = []string{keyMaxCalls, keyMode, keyWidest, keyWorkspaces}

// Load reads and validates the principals file at path (YAML; format in
// the package's README) and returns its principals. Every error is an
// *Error naming the file, and where it applies the line, principal and
// key: CodeUnsafe when the file is writable by its group or others;
// CodeInvalid when it cannot be read, is not a regular file, is larger
// than 1 MiB, is not YAML, has an unknown or repeated key (with the
// closest known key), lists no principal, names one with an empty name or
// a name holding whitespace or control characters, gives a principal no
// workspace, a workspace that is not absolute, not an existing directory
// (after every symlink is resolved), "/" or resolves to it, or is listed
// twice (after resolution), an unknown mode (with the allowed values), a
// mode wider than widest-mode, or a max-concurrent-calls that is not a
// whole number or is negative. Load reads the file once, through one open
// descriptor, and changes nothing.
func Load(path string) (*Set, error) {
	b, err := read(path)
	if err != nil {
		return nil, err
	}
	at := where{file: path}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, at.fail("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, at.fail("no principals: list at least one under %q", keyPrincipals)
	}
	root := doc.Content[0]
	at.line = root.Line
	if root.Kind != yaml.MappingNode {
		return nil, at.fail("want a mapping with the one key %q", keyPrincipals)
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		at.line = k.Line
		switch {
		case k.Value != keyPrincipals:
			return nil, at.fail("unknown key %q%s; the file has the one key %q", k.Value, suggest(k.Value, []string{keyPrincipals}), keyPrincipals)
		case list != nil:
			return nil, at.fail("key %q is given twice", keyPrincipals)
		}
		list = root.Content[i+1]
	}
	if list == nil || list.Kind != yaml.MappingNode || len(list.Content) == 0 {
		if list != nil {
			at.line = list.Line
		}
		return nil, at.fail("no principals: %q must map each subject to its workspaces and modes", keyPrincipals)
	}
	set := &Set{byName: map[string]*Principal{}}
	for i := 0; i+1 < len(list.Content); i += 2 {
		k := list.Content[i]
		p, err := parsePrincipal(where{file: path, principal: k.Value, line: k.Line}, k, list.Content[i+1])
		if err != nil {
			return nil, err
		}
		if _, dup := set.byName[p.Name]; dup {
			return nil, where{file: path, principal: k.Value, line: k.Line}.fail("the principal is listed twice")
		}
		set.byName[p.Name] = p
	}
	return set, nil
}

// read returns the bytes of the file at path, refusing one that is not a
// regular file, is writable by its group or others, or is larger than
// maxFileBytes. The mode is checked on the descriptor it reads.
func read(path string) ([]byte, error) {
	at := where{file: path}
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		e := at.fail("cannot be read")
		e.Err = err
		return nil, e
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		e := at.fail("cannot be read")
		e.Err = err
		return nil, e
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, at.fail("not a regular file")
	case fi.Mode().Perm()&0o022 != 0:
		e := at.fail("is writable by its group or others (mode %#o), who could grant themselves workspaces and modes; run chmod go-w on it", fi.Mode().Perm())
		e.Code = CodeUnsafe
		return nil, e
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		e := at.fail("belongs to uid %d, neither this process's user nor root, who could grant themselves workspaces and modes; chown it", st.Uid)
		e.Code = CodeUnsafe
		return nil, e
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		e := at.fail("cannot be read")
		e.Err = err
		return nil, e
	}
	if len(b) > maxFileBytes {
		return nil, at.fail("larger than %d bytes", maxFileBytes)
	}
	return b, nil
}

// parsePrincipal validates one entry of the principals mapping: name is
// its key node, body its value.
func parsePrincipal(at where, name, body *yaml.Node) (*Principal, error) {
	if err := checkName(name); err != "" {
		return nil, at.fail("%s", err)
	}
	p := &Principal{Name: name.Value}
	if body.Kind != yaml.MappingNode && body.Tag != "!!null" {
		at.line = body.Line
		return nil, at.fail("want a mapping of %s", strings.Join(principalKeys, ", "))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(body.Content); i += 2 {
		k, v := body.Content[i], body.Content[i+1]
		at := at
		at.key, at.line = k.Value, k.Line
		if !slices.Contains(principalKeys, k.Value) {
			at.key = ""
			return nil, at.fail("unknown key %q%s; the keys are %s", k.Value, suggest(k.Value, principalKeys), strings.Join(principalKeys, ", "))
		}
		if seen[k.Value] {
			return nil, at.fail("the key is given twice")
		}
		seen[k.Value] = true
		var err error
		switch k.Value {
		case keyWorkspaces:
			p.Workspaces, err = workspaces(at, v)
		case keyMode:
			p.Mode, err = mode(at, v)
		case keyWidest:
			p.WidestMode, err = mode(at, v)
		case keyMaxCalls:
			p.MaxConcurrentCalls, err = maxCalls(at, v)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(p.Workspaces) == 0 {
		at.key = keyWorkspaces
		return nil, at.fail("at least one workspace is required (an HTTP session never falls back to the server's working directory)")
	}
	switch {
	case p.WidestMode == "":
		p.WidestMode = p.Mode
	case p.Mode != "" && sandboxpolicy.IsWider(p.Mode, p.WidestMode):
		at.key = keyMode
		return nil, at.fail("mode %q is wider than widest-mode %q", p.Mode, p.WidestMode)
	}
	return p, nil
}

// checkName returns why name is refused as a principal's name, "" when it
// is not: it must be a non-empty UTF-8 string without whitespace or
// control characters (a token's subject is compared as it is).
func checkName(name *yaml.Node) string {
	s := name.Value
	switch {
	case name.Kind != yaml.ScalarNode || s == "":
		return "a principal's name must be a non-empty string"
	case !utf8.ValidString(s):
		return "the name is not valid UTF-8"
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Sprintf("the name %s holds whitespace or control characters", strconv.Quote(s))
	}
	return ""
}

// workspaces validates a principal's list of workspaces and returns each
// canonical and cleaned.
func workspaces(at where, v *yaml.Node) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		at.line = v.Line
		return nil, at.fail("want a list of absolute directories, got %s", given(v))
	}
	out := make([]string, 0, len(v.Content))
	for _, n := range v.Content {
		at := at
		at.line = n.Line
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return nil, at.fail("want an absolute directory, got %s", given(n))
		}
		w := n.Value
		switch {
		case !filepath.IsAbs(w) || strings.ContainsRune(w, 0):
			return nil, at.fail("%s is not an absolute path", strconv.Quote(w))
		case filepath.Clean(w) == "/":
			return nil, at.fail("%s is the whole file system, never a workspace", strconv.Quote(w))
		}
		canon := filepath.Clean(sandboxpolicy.CanonicalPath(filepath.Clean(w)))
		if fi, err := os.Stat(canon); err != nil || !fi.IsDir() {
			return nil, at.fail("%s is not an existing directory", strconv.Quote(w))
		}
		if canon == "/" {
			return nil, at.fail("%s resolves to \"/\", the whole file system, never a workspace", strconv.Quote(w))
		}
		if slices.Contains(out, canon) {
			return nil, at.fail("%s is listed twice (both resolve to %s)", strconv.Quote(w), strconv.Quote(canon))
		}
		out = append(out, canon)
	}
	return out, nil
}

// mode validates a mode value.
func mode(at where, v *yaml.Node) (sandbox.Mode, error) {
	names := make([]string, 0, 3)
	for _, m := range sandbox.Modes() {
		names = append(names, string(m))
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		at.line = v.Line
		return "", at.fail("want one of %s, got %s", strings.Join(names, ", "), given(v))
	}
	if m := sandbox.Mode(v.Value); m.Valid() {
		return m, nil
	}
	return "", at.fail("unknown mode %q: allowed values are %s%s", v.Value, strings.Join(names, ", "), suggest(v.Value, names))
}

// maxCalls validates max-concurrent-calls: a whole number, 0 or more.
func maxCalls(at where, v *yaml.Node) (int, error) {
	at.line = v.Line
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
		return 0, at.fail("want a whole number, got %s", given(v))
	}
	n, err := strconv.Atoi(v.Value)
	if err != nil {
		return 0, at.fail("want a whole number, got %s", given(v))
	}
	if n < 0 {
		return 0, at.fail("%d is negative: give 1 or more, or 0 for the server's --principal-max-calls", n)
	}
	return n, nil
}

// given describes a YAML value for an error: a scalar quoted, else its
// kind.
func given(v *yaml.Node) string {
	switch v.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(v.Value)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	default:
		return "an alias"
	}
}

// suggest returns ` (did you mean "C"?)` for the candidate closest to word
// by edit distance when it is a likely typo (at most 2 edits, or a third
// of the word), else "".
func suggest(word string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := levenshtein.ComputeDistance(word, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(2, len(word)/3) || bestD >= len(word) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
