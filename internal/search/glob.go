package search

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"
)

// DefaultGlobLimit is the number of paths Glob returns when GlobOptions.Limit
// is zero.
const DefaultGlobLimit = 1000

// ErrBadPattern is returned (wrapped) for a glob pattern doublestar rejects.
var ErrBadPattern = doublestar.ErrBadPattern

// GlobOptions tunes Glob.
type GlobOptions struct {
	// Pattern is a doublestar pattern over slash-separated paths relative to
	// the root ("**/*.go", "cmd/*/main.go", "{a,b}/**"). A pattern without a
	// "/" matches the file's name at any depth, as in .gitignore ("*.go" is
	// "**/*.go").
	Pattern string
	// Walk tunes the walk (hidden files, .gitignore, entry cap).
	Walk WalkOptions
	// Limit caps the paths returned; zero means DefaultGlobLimit.
	Limit int
}

// GlobFile is one path Glob found.
type GlobFile struct {
	// Path is slash-separated and relative to the root.
	Path string
	// ModTime is the file's modification time.
	ModTime time.Time
}

// GlobResult is what Glob found.
type GlobResult struct {
	// Files are the matching regular files, newest first (ties in byte order
	// of Path), at most Limit of them.
	Files []GlobFile
	// Matched is the number of files that matched (of those the walk saw).
	Matched int
	// Truncated reports whether more files matched than Files holds, or the
	// walk stopped at its entry cap.
	Truncated bool
	// Stats describe the walk.
	Stats WalkStats
}

// Glob returns the regular files beneath the directory root (an absolute
// canonical path) whose relative path matches opts.Pattern, newest first.
// Only the pattern's static prefix is walked ("cmd/**/*.go" walks "cmd").
// Errors: ErrBadPattern (wrapped) for an invalid pattern, *os.PathError when
// root cannot be opened, the context's error when cancelled.
func Glob(ctx context.Context, root string, opts GlobOptions) (GlobResult, error) {
	pattern, err := globPattern(opts.Pattern)
	if err != nil {
		return GlobResult{}, err
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultGlobLimit
	}
	base, _ := doublestar.SplitPattern(pattern)
	walkRoot, prefix := root, ""
	if base != "." {
		walkRoot, prefix = root+"/"+base, base+"/"
	}
	var files []GlobFile
	stats, err := Walk(ctx, walkRoot, opts.Walk, func(e Entry) error {
		rel := prefix + e.Rel
		if !doublestar.MatchUnvalidated(pattern, rel) {
			return nil
		}
		mt, err := e.ModTime()
		if err != nil {
			return nil // gone since it was listed
		}
		files = append(files, GlobFile{Path: rel, ModTime: mt})
		return nil
	})
	if err != nil {
		if base != "." && isNotFound(err) {
			return GlobResult{Files: []GlobFile{}}, nil // nothing under a missing prefix
		}
		return GlobResult{}, err
	}
	slices.SortFunc(files, func(a, b GlobFile) int {
		return cmp.Or(b.ModTime.Compare(a.ModTime), strings.Compare(a.Path, b.Path))
	})
	res := GlobResult{Files: files, Matched: len(files), Truncated: stats.Truncated, Stats: stats}
	if len(files) > limit {
		res.Files, res.Truncated = files[:limit], true
	}
	if res.Files == nil {
		res.Files = []GlobFile{}
	}
	return res, nil
}

// isNotFound reports whether err says a path is absent.
func isNotFound(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// globPattern validates p and anchors a pattern without "/" at any depth.
func globPattern(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "/") {
		return "", errors.Join(ErrBadPattern, errors.New("the pattern must be a non-empty relative path"))
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == ".." || c == "." {
			return "", errors.Join(ErrBadPattern, errors.New("the pattern must not contain . or .. elements"))
		}
	}
	if !strings.Contains(p, "/") {
		p = "**/" + p
	}
	if !doublestar.ValidatePattern(p) {
		return "", ErrBadPattern
	}
	return p, nil
}
