package search

import (
	"bytes"
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// ErrNewlineInPattern is returned for a pattern that can only match across a
// line break: grep matches one line at a time.
var ErrNewlineInPattern = errors.New("the pattern must not match a line break")

// maxPrefilterLiterals bounds the literals of a prefilter: past it, looking
// for each of them costs more than the regexp pass it would save.
const maxPrefilterLiterals = 8

// matcher finds matching lines in a buffer of whole lines.
type matcher struct {
	lit []byte         // the literal searched for when there is no regexp
	re  *regexp.Regexp // the line regexp; it never matches "\n"
	req [][]byte       // literals one of which every match of re contains
}

// compile builds the matcher for a grep pattern: a literal, or an RE2 regular
// expression (Go's regexp syntax) whose classes and "." are cut at the line
// break and whose ^, $, \A and \z anchor at line boundaries. Errors:
// *syntax.Error for an invalid expression, ErrNewlineInPattern.
func compile(pattern string, literal, ignoreCase bool) (*matcher, error) {
	if literal {
		if strings.Contains(pattern, "\n") {
			return nil, ErrNewlineInPattern
		}
		if !ignoreCase {
			return &matcher{lit: []byte(pattern)}, nil
		}
		pattern = regexp.QuoteMeta(pattern)
	}
	flags := syntax.Perl
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		return nil, err
	}
	tree, err = lineOnly(tree)
	if err != nil {
		return nil, err
	}
	tree = tree.Simplify()
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, err
	}
	return &matcher{re: re, req: required(tree)}, nil
}

// lineOnly rewrites re so it cannot match a line break: "\n" leaves every
// class, "." never matches it, text anchors become line anchors, and an end
// anchor also matches before a CR line ending. A literal line break is
// ErrNewlineInPattern.
func lineOnly(re *syntax.Regexp) (*syntax.Regexp, error) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return nil, ErrNewlineInPattern
			}
		}
	case syntax.OpCharClass:
		re.Rune = withoutNewline(re.Rune)
		if len(re.Rune) == 0 {
			re.Op = syntax.OpNoMatch
		}
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText, syntax.OpEndLine:
		// A line ends before its line break, or before a CR and then the
		// line break: "x$" matches "x\r\n" as it matches "x\n".
		cr := &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune{'\r'}, Flags: re.Flags}
		return &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: []*syntax.Regexp{
			{Op: syntax.OpQuest, Flags: re.Flags, Sub: []*syntax.Regexp{cr}},
			{Op: syntax.OpEndLine, Flags: re.Flags},
		}}, nil
	}
	for i, sub := range re.Sub {
		s, err := lineOnly(sub)
		if err != nil {
			return nil, err
		}
		re.Sub[i] = s
	}
	return re, nil
}

// withoutNewline removes '\n' from the class ranges (lo, hi pairs).
func withoutNewline(ranges []rune) []rune {
	out := make([]rune, 0, len(ranges)+2)
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo > '\n' || hi < '\n' {
			out = append(out, lo, hi)
			continue
		}
		if lo < '\n' {
			out = append(out, lo, '\n'-1)
		}
		if hi > '\n' {
			out = append(out, '\n'+1, hi)
		}
	}
	return out
}

// required returns literals, case-sensitive and non-empty, one of which
// every match of re contains, or nil when there are none (or too many): a run
// of literals in a concatenation, the required literals of a part that must
// match at least once, or the union over the branches of an alternation.
// Among candidates it prefers the set whose shortest literal is longest.
func required(re *syntax.Regexp) [][]byte {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 || len(re.Rune) == 0 {
			return nil
		}
		return [][]byte{runesToBytes(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpAlternate:
		var all [][]byte
		for _, sub := range re.Sub {
			r := required(sub)
			if r == nil || len(all)+len(r) > maxPrefilterLiterals {
				return nil
			}
			all = append(all, r...)
		}
		return all
	case syntax.OpConcat:
		var best [][]byte
		var run []byte
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
				run = append(run, runesToBytes(sub.Rune)...)
				if len(run) > 0 && better([][]byte{run}, best) {
					best = [][]byte{bytes.Clone(run)}
				}
				continue
			}
			run = nil
			if r := required(sub); better(r, best) {
				best = r
			}
		}
		return best
	}
	return nil
}

// better reports whether the literal set a makes a better prefilter than b:
// a non-empty set whose shortest literal is longer, or as long with fewer
// literals.
func better(a, b [][]byte) bool {
	if len(a) == 0 {
		return false
	}
	if len(b) == 0 {
		return true
	}
	sa, sb := shortest(a), shortest(b)
	return sa > sb || (sa == sb && len(a) < len(b))
}

func shortest(set [][]byte) int {
	n := len(set[0])
	for _, l := range set[1:] {
		n = min(n, len(l))
	}
	return n
}

func runesToBytes(rs []rune) []byte {
	b := make([]byte, 0, len(rs))
	for _, r := range rs {
		b = utf8.AppendRune(b, r)
	}
	return b
}

// next returns the offsets [ls, le) of the first line of buf that matches;
// buf starts at a line start and le excludes the line's '\n'.
func (m *matcher) next(buf []byte) (ls, le int, ok bool) {
	switch {
	case m.re == nil:
		i := bytes.Index(buf, m.lit)
		if i < 0 {
			return 0, 0, false
		}
		ls, le = lineAround(buf, i)
		return ls, le, true
	case m.req != nil:
		var next [maxPrefilterLiterals]int // each literal's next start, -1 none left
		for k := range m.req {
			next[k] = indexLit(buf, 0, m.req[k])
		}
		for pos := 0; pos < len(buf); {
			first := -1
			for k, lit := range m.req {
				if next[k] >= 0 && next[k] < pos {
					next[k] = indexLit(buf, pos, lit)
				}
				if next[k] >= 0 && (first < 0 || next[k] < first) {
					first = next[k]
				}
			}
			if first < 0 {
				return 0, 0, false
			}
			ls, le = lineAround(buf, first)
			if m.re.Match(buf[ls:le]) {
				return ls, le, true
			}
			pos = le + 1
		}
		return 0, 0, false
	default:
		loc := m.re.FindIndex(buf)
		if loc == nil || (loc[0] == len(buf) && loc[0] > 0 && buf[loc[0]-1] == '\n') {
			// An empty match after the last line break is not on a line.
			return 0, 0, false
		}
		ls, le = lineAround(buf, loc[0])
		return ls, le, true
	}
}

// indexLit returns the offset of the first lit in buf at or after pos, or -1.
func indexLit(buf []byte, pos int, lit []byte) int {
	var i int
	if len(lit) == 1 {
		i = bytes.IndexByte(buf[pos:], lit[0])
	} else {
		i = bytes.Index(buf[pos:], lit)
	}
	if i < 0 {
		return -1
	}
	return pos + i
}

// lineAround returns the bounds of the line of buf holding offset i, the
// line's '\n' excluded.
func lineAround(buf []byte, i int) (ls, le int) {
	ls = bytes.LastIndexByte(buf[:i], '\n') + 1
	le = bytes.IndexByte(buf[i:], '\n')
	if le < 0 {
		return ls, len(buf)
	}
	return ls, i + le
}
