//go:build linux

package search_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/internal/search"
)

func grep(t *testing.T, root string, opts search.GrepOptions) search.GrepResult {
	t.Helper()
	res, err := search.Grep(context.Background(), root, opts)
	require.NoError(t, err)
	return res
}

// render is a compact, comparable form of a result: "path" per file, with
// ":count" in ModeCount and "  n:text" / "  n-text" lines in ModeContent.
func render(res search.GrepResult, mode search.Mode) []string {
	out := []string{}
	for _, f := range res.Files {
		switch mode {
		case search.ModeCount:
			out = append(out, fmt.Sprintf("%s:%d", f.Path, f.Count))
		case search.ModeContent:
			out = append(out, f.Path)
			for _, l := range f.Lines {
				sep := "-"
				if l.Match {
					sep = ":"
				}
				out = append(out, fmt.Sprintf("  %d%s%s", l.Number, sep, l.Text))
			}
		default:
			out = append(out, f.Path)
		}
	}
	return out
}

func TestGrep(t *testing.T) {
	specs := []string{
		"a.go: package a\nfunc Alpha() {}\nfunc beta() {}\n",
		"b/b.go: package b\n\nfunc Beta(ctx context.Context) error {\n\treturn nil\n}\n",
		"b/notes.md: TODO: alpha\ntodo lower\n",
		"crlf.txt: one\r\ntwo match\r\nthree\r\n",
		"nonl.txt: first\nlast match",
		"ignored.log: func Alpha\n",
		".gitignore: *.log\n",
		".hidden.go: func Alpha\n",
	}
	tests := []struct {
		name string
		opts search.GrepOptions
		want []string
	}{
		{name: "files with matches, regexp", opts: search.GrepOptions{Pattern: `func [A-Z]\w*\(`}, want: []string{"a.go", "b/b.go"}},
		{name: "literal with metacharacters", opts: search.GrepOptions{Pattern: "Alpha()", Literal: true}, want: []string{"a.go"}},
		{name: "counts", opts: search.GrepOptions{Pattern: "func", Literal: true, Mode: search.ModeCount}, want: []string{"a.go:2", "b/b.go:1"}},
		{name: "ignore case, literal", opts: search.GrepOptions{Pattern: "TODO", Literal: true, IgnoreCase: true, Mode: search.ModeCount}, want: []string{"b/notes.md:2"}},
		{name: "ignore case, regexp", opts: search.GrepOptions{Pattern: "^todo", IgnoreCase: true, Mode: search.ModeCount}, want: []string{"b/notes.md:2"}},
		{
			name: "content with line numbers", opts: search.GrepOptions{Pattern: "func", Literal: true, Mode: search.ModeContent},
			want: []string{"a.go", "  2:func Alpha() {}", "  3:func beta() {}", "b/b.go", "  3:func Beta(ctx context.Context) error {"},
		},
		{
			name: "context lines, merged", opts: search.GrepOptions{Pattern: "func", Literal: true, Mode: search.ModeContent, Before: 1, After: 1, Glob: "a.go"},
			want: []string{"a.go", "  1-package a", "  2:func Alpha() {}", "  3:func beta() {}"},
		},
		{
			name: "context lines, before and after", opts: search.GrepOptions{Pattern: "return", Mode: search.ModeContent, Before: 2, After: 5},
			want: []string{"b/b.go", "  2-", "  3-func Beta(ctx context.Context) error {", "  4:\treturn nil", "  5-}"},
		},
		{name: "a CR before the line break is not part of the line", opts: search.GrepOptions{Pattern: "match$", Mode: search.ModeContent}, want: []string{"crlf.txt", "  2:two match", "nonl.txt", "  2:last match"}},
		{name: "glob filter by name", opts: search.GrepOptions{Pattern: "a", Glob: "*.md"}, want: []string{"b/notes.md"}},
		{name: "glob filter by path", opts: search.GrepOptions{Pattern: "package", Glob: "b/**"}, want: []string{"b/b.go"}},
		{name: "ignored and hidden files on request", opts: search.GrepOptions{Pattern: "func Alpha", Walk: search.WalkOptions{Hidden: true, NoIgnore: true}}, want: []string{".hidden.go", "a.go", "ignored.log"}},
		{name: "\\s does not cross lines", opts: search.GrepOptions{Pattern: `\{\s+return`}, want: []string{}},
		{name: "(?s). does not cross lines", opts: search.GrepOptions{Pattern: `(?s)error.{0,3}return`}, want: []string{}},
		{name: "\\A and \\z anchor at lines", opts: search.GrepOptions{Pattern: `\Afunc beta\(\) \{\}\z`}, want: []string{"a.go"}},
		{name: "empty lines match ^$, not past the last line break", opts: search.GrepOptions{Pattern: `^$`, Mode: search.ModeContent}, want: []string{"b/b.go", "  2:"}},
		{name: "negated class never matches the line break", opts: search.GrepOptions{Pattern: `alpha[^x]todo`}, want: []string{}},
		{name: "limit on files", opts: search.GrepOptions{Pattern: "a", Literal: true, Limit: 2}, want: []string{"a.go", "b/b.go"}},
	}
	root := t.TempDir()
	fixture.Build(t, root, specs...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := grep(t, root, tt.opts)
			mode := tt.opts.Mode
			assert.Equal(t, tt.want, render(res, mode))
			assert.Empty(t, res.Stats.Problems)
		})
	}
}

func TestGrepLimitCutsDeterministically(t *testing.T) {
	root := t.TempDir()
	var specs []string
	for i := range 40 {
		specs = append(specs, fmt.Sprintf("d%02d/f.txt: x\nhit %d\nx\nhit again\nx\n", i, i))
	}
	fixture.Build(t, root, specs...)
	for _, tt := range []struct {
		name      string
		opts      search.GrepOptions
		want      []string
		truncated bool
	}{
		{name: "files", opts: search.GrepOptions{Pattern: "hit", Limit: 3}, want: []string{"d00/f.txt", "d01/f.txt", "d02/f.txt"}, truncated: true},
		{name: "counts", opts: search.GrepOptions{Pattern: "hit", Limit: 2, Mode: search.ModeCount}, want: []string{"d00/f.txt:2", "d01/f.txt:2"}, truncated: true},
		{
			name: "lines cut inside a file, after-context kept, the next before-context dropped",
			opts: search.GrepOptions{Pattern: "hit", Limit: 3, Mode: search.ModeContent, Before: 1, After: 1},
			want: []string{
				"d00/f.txt", "  1-x", "  2:hit 0", "  3-x", "  4:hit again", "  5-x",
				"d01/f.txt", "  1-x", "  2:hit 1", "  3-x",
			},
			truncated: true,
		},
		{name: "exactly the limit is not truncated", opts: search.GrepOptions{Pattern: "hit 39", Limit: 1}, want: []string{"d39/f.txt"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, workers := range []int{1, 2, 8} {
				opts := tt.opts
				opts.Workers = workers
				res := grep(t, root, opts)
				assert.Equal(t, tt.want, render(res, opts.Mode), "workers %d", workers)
				assert.Equal(t, tt.truncated, res.Truncated, "workers %d", workers)
			}
		})
	}
}

func TestGrepBinaryAndSpecialFiles(t *testing.T) {
	root := t.TempDir()
	early := "head\x00 needle\n"
	late := strings.Repeat("x\n", 8192/2) + "needle\x00\n" // the NUL is byte 8198
	fixture.Build(t, root, "early.bin: "+early, "late.txt: "+late, "text.txt: a needle\n")
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	res := grep(t, root, search.GrepOptions{Pattern: "needle", Literal: true, Mode: search.ModeContent})
	assert.Equal(t, []string{"late.txt", "  4097:needle\x00", "text.txt", "  1:a needle"}, render(res, search.ModeContent))
	assert.Equal(t, 1, res.Binary)
	assert.Equal(t, 2, res.Searched)
}

func TestGrepLongLines(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("é", 3000) + "needle"
	// Four windows: a's; the first needle; b's, a needle and c's, with no
	// line break; the last needle and the line break.
	huge := strings.Repeat("a", search.MaxLineBytes+10) + "needle" + strings.Repeat("b", search.MaxLineBytes) + "needle" +
		strings.Repeat("c", search.MaxLineBytes) + "needle\nnext needle\n"
	fixture.Build(t, root, "long.txt: "+long+"\n", "huge.txt: "+huge, "bad.txt: \xffneedle\n")
	res := grep(t, root, search.GrepOptions{Pattern: "needle", Literal: true, Mode: search.ModeContent, MaxLineLength: 10})
	assert.Equal(t, []string{
		"bad.txt", "  1:\ufffdneedle",
		// The over-long line matches once, as its first matching window.
		"huge.txt", "  1:aaaaaaaaaa... (line truncated to 10 chars)", "  2:next needl... (line truncated to 10 chars)",
		"long.txt", "  1:éééééééééé... (line truncated to 10 chars)",
	}, render(res, search.ModeContent))
	res = grep(t, root, search.GrepOptions{Pattern: "needle", Literal: true, Mode: search.ModeCount})
	assert.Equal(t, []string{"bad.txt:1", "huge.txt:2", "long.txt:1"}, render(res, search.ModeCount))
}

func TestGrepRootIsAFile(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "f.txt: one\ntwo\n")
	res := grep(t, filepath.Join(root, "f.txt"), search.GrepOptions{Pattern: "two", Mode: search.ModeContent})
	assert.Equal(t, []string{"f.txt", "  2:two"}, render(res, search.ModeContent))
}

func TestGrepBadOptions(t *testing.T) {
	root := t.TempDir()
	for _, tt := range []struct {
		opts search.GrepOptions
		want error
	}{
		{search.GrepOptions{Pattern: "a\nb", Literal: true}, search.ErrNewlineInPattern},
		{search.GrepOptions{Pattern: `a\nb`}, search.ErrNewlineInPattern},
		{search.GrepOptions{Pattern: "a", Mode: "lines"}, search.ErrBadOptions},
		{search.GrepOptions{Pattern: "a", Before: -1}, search.ErrBadOptions},
		{search.GrepOptions{Pattern: "a", After: search.MaxContextLines + 1}, search.ErrBadOptions},
		{search.GrepOptions{Pattern: "a", Glob: "../*"}, search.ErrBadPattern},
	} {
		_, err := search.Grep(context.Background(), root, tt.opts)
		assert.ErrorIs(t, err, tt.want, "%+v", tt.opts)
	}
	_, err := search.Grep(context.Background(), root, search.GrepOptions{Pattern: "a("})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing closing )")
}

func TestGrepCancelled(t *testing.T) {
	root := t.TempDir()
	fixture.Build(t, root, "a.txt: x\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := search.Grep(ctx, root, search.GrepOptions{Pattern: "x"})
	require.ErrorIs(t, err, context.Canceled)
}

// TestGrepAgainstReference compares Grep with a line-by-line reference over
// random files larger than the scan buffer, so that matches and context
// lines fall on every side of the buffer's refills.
func TestGrepAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "needle", "Needle", "x", "", "  ", "func", "é"}
	root := t.TempDir()
	files := map[string][]string{}
	for i := range 4 {
		var lines []string
		for range 2500 + rng.IntN(4000) {
			n := rng.IntN(8)
			var b strings.Builder
			for range n {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			if rng.IntN(1000) == 0 {
				b.WriteString(strings.Repeat("z", 70000)) // longer than the first buffer
			}
			lines = append(lines, b.String())
		}
		name := fmt.Sprintf("f%d.txt", i)
		text := strings.Join(lines, "\n")
		if i%2 == 0 {
			text += "\n"
		}
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o644))
		files[name] = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	}
	patterns := []struct {
		pattern    string
		literal    bool
		ignoreCase bool
	}{
		{"needle", true, false},
		{"needle", true, true},
		{`needle\s+func`, false, false},
		{`^gamma`, false, false},
		{`[ab]eta $`, false, false},
		{`(?i)needle x`, false, false},
		{`é+ x`, false, false},
		{`(alpha|gamma) x`, false, false},
		{`beta|Needle|z`, false, false},
		{`a`, false, false},
	}
	for _, p := range patterns {
		for _, ctxLines := range [][2]int{{0, 0}, {2, 3}} {
			t.Run(fmt.Sprintf("%s/%v/%v", p.pattern, p.ignoreCase, ctxLines), func(t *testing.T) {
				opts := search.GrepOptions{
					Pattern: p.pattern, Literal: p.literal, IgnoreCase: p.ignoreCase, Mode: search.ModeContent,
					Before: ctxLines[0], After: ctxLines[1], Limit: 1 << 30, MaxLineLength: 100,
				}
				res := grep(t, root, opts)
				expr := p.pattern
				if p.literal {
					expr = regexp.QuoteMeta(expr)
				}
				if p.ignoreCase {
					expr = "(?i)" + expr
				}
				re := regexp.MustCompile(expr)
				var want []string
				for i := range 4 {
					name := fmt.Sprintf("f%d.txt", i)
					want = append(want, reference(name, files[name], re, ctxLines[0], ctxLines[1])...)
				}
				assert.Equal(t, want, render(res, search.ModeContent))
			})
		}
	}
}

// reference is grep -n with context over lines, rendered like render.
func reference(name string, lines []string, re *regexp.Regexp, before, after int) []string {
	show := map[int]bool{} // line index -> match
	for i, l := range lines {
		if re.MatchString(l) {
			for j := max(i-before, 0); j <= min(i+after, len(lines)-1); j++ {
				if _, ok := show[j]; !ok {
					show[j] = false
				}
			}
			show[i] = true
		}
	}
	if len(show) == 0 {
		return nil
	}
	out := []string{name}
	for i, l := range lines {
		m, ok := show[i]
		if !ok {
			continue
		}
		sep := "-"
		if m {
			sep = ":"
		}
		if n := []rune(l); len(n) > 100 {
			l = string(n[:100]) + "... (line truncated to 100 chars)"
		}
		out = append(out, fmt.Sprintf("  %d%s%s", i+1, sep, l))
	}
	return out
}
