package errcode_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the module root, two levels above this package.
const repoRoot = "../.."

// registry returns every code the module declares: the string value of
// each constant, outside tests, whose declared type is Code (in this
// package, or a package's alias of it) or errcode.Code.
func registry(t *testing.T) map[string]bool {
	t.Helper()
	codes := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if !isCodeType(vs.Type) {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						codes[s] = true
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	return codes
}

func isCodeType(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "Code"
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && x.Name == "errcode" && e.Sel.Name == "Code"
	}
	return false
}

var (
	// codeSpan is an inline code span or a fenced block of Markdown.
	codeSpan = regexp.MustCompile("(?s)```.*?```|`[^`\n]+`")
	// codeWord is a word shaped like a code: capitals and digits in two
	// or more parts joined by underscores (FS_NOT_FOUND, SERVER_BUSY).
	codeWord = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)
	// notCodes are code-shaped words the docs use for something else,
	// each with what it is.
	notCodes = map[string]string{
		"SANDBOX_MODES": "docs/behaviour.md P-17: the spec's ordered list of sandbox modes",
	}
)

// TestDocsNameOnlyDeclaredCodes keeps README.md and docs/*.md from naming
// a code the server never sends. The rule: in every code span and fenced
// block, a code-shaped word (codeWord) whose first part is the first part
// of a declared code (FS, EXEC, SANDBOX, JOURNAL, ...) must be a declared
// code. Words with any other first part (HARNESS_MODE, OTEL_EXPORTER_...,
// O_NOFOLLOW, RLIMIT_NOFILE) are environment variables or system names,
// not codes, and are not checked; neither are words written in prose
// outside code spans, nor the few words in notCodes.
func TestDocsNameOnlyDeclaredCodes(t *testing.T) {
	codes := registry(t)
	require.Contains(t, codes, "FS_NOT_FOUND", "the registry walk finds fs's codes")
	require.Contains(t, codes, "INVALID_ARGUMENT")
	prefixes := map[string]bool{}
	for c := range codes {
		first, _, _ := strings.Cut(c, "_")
		prefixes[first] = true
	}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	docs = append(docs, filepath.Join(repoRoot, "README.md"))
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, span := range codeSpan.FindAllString(string(b), -1) {
			for _, w := range codeWord.FindAllString(span, -1) {
				first, _, _ := strings.Cut(w, "_")
				if _, other := notCodes[w]; prefixes[first] && !other {
					assert.True(t, codes[w], "%s names %s, which no package declares as an errcode.Code", filepath.Base(doc), w)
				}
			}
		}
	}
}

// npxRun is an npx command in a code span or fenced block: npx and the
// words up to the package it runs.
var npxRun = regexp.MustCompile(`\bnpx((?:\s+-[-\w]*)*)\s+[@\w]`)

// TestDocsNpxRunsUnattended: every npx command the docs give (README.md,
// docs/*.md, e2e/README.md) passes -y, so it runs from a script, where npx
// would otherwise stop to ask whether to install the package.
func TestDocsNpxRunsUnattended(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	docs = append(docs, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "e2e", "README.md"))
	seen := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, span := range codeSpan.FindAllString(string(b), -1) {
			for _, m := range npxRun.FindAllStringSubmatch(span, -1) {
				seen++
				assert.Contains(t, strings.Fields(m[1]), "-y", "%s: %q runs npx without -y", filepath.Base(doc), m[0])
			}
		}
	}
	assert.NotZero(t, seen, "the docs give at least one npx command")
}
