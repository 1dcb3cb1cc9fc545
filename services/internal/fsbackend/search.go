package fsbackend

import (
	"cmp"
	"context"
	"errors"
	"regexp/syntax"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/search"
	"github.com/dsh-go/harness/services/fs"
)

// Glob returns the regular files beneath the directory base.Key whose path
// relative to it matches opts.Pattern, newest first (issue 16). The search
// runs on the host (reads are not fenced) through internal/search: every
// entry is opened beneath a handle on the base, symlinks are never followed,
// and the walk stops at fs.MaxSearchEntries. Errors: CodeInvalidSearch (a
// bad pattern or a negative limit), CodeNotFound, CodeNotDirectory,
// CodePermissionDenied (also when the base cannot be listed), CodeAborted,
// CodeIOError.
func (f *Backend) Glob(ctx context.Context, base fs.Target, opts fs.GlobOptions) (fs.GlobResult, error) {
	const op = "glob"
	if err := checkCtx(ctx, op); err != nil {
		return fs.GlobResult{}, err
	}
	if opts.Limit < 0 {
		return fs.GlobResult{}, invalidSearch(op, "limit must not be negative", nil)
	}
	if err := f.searchBase(base, op, true); err != nil {
		return fs.GlobResult{}, err
	}
	var res search.GlobResult
	err := f.as.Do(func() (err error) {
		res, err = search.Glob(ctx, string(base.Key), search.GlobOptions{
			Pattern: opts.Pattern,
			Walk:    f.walkOptions(opts.SearchScope),
			Limit:   cmp.Or(opts.Limit, fs.DefaultSearchLimit),
		})
		return err
	})
	if err != nil {
		return fs.GlobResult{}, searchErr(op, base.DisplayPath, opts.Pattern, err)
	}
	unreadable, err := unreadable(op, base.DisplayPath, res.Stats)
	if err != nil {
		return fs.GlobResult{}, err
	}
	out := fs.GlobResult{
		Files:      make([]fs.GlobFile, len(res.Files)),
		Matched:    res.Matched,
		Truncated:  res.Truncated,
		WalkCapped: res.Stats.Truncated,
		Unreadable: unreadable,
		Denied:     res.Stats.Denied,
	}
	for i, g := range res.Files {
		out.Files[i] = fs.GlobFile{Path: g.Path, ModTime: g.ModTime}
	}
	return out, nil
}

// Grep searches the regular files beneath base.Key, or the file base.Key
// itself, for lines matching opts.Pattern (issue 16). Files are scanned in
// parallel through bounded buffers and reported in walk order; binary files
// are skipped; the scan stops once Limit results are found or the context
// ends. Errors: CodeInvalidSearch (a bad pattern or glob, an unknown mode,
// context lines out of range, a negative limit), CodeNotFound,
// CodeNotRegularFile, CodePermissionDenied, CodeAborted, CodeIOError.
func (f *Backend) Grep(ctx context.Context, base fs.Target, opts fs.GrepOptions) (fs.GrepResult, error) {
	const op = "grep"
	if err := checkCtx(ctx, op); err != nil {
		return fs.GrepResult{}, err
	}
	mode := opts.Mode
	switch mode {
	case "":
		mode = fs.GrepFiles
	case fs.GrepFiles, fs.GrepCount, fs.GrepContent:
	default:
		return fs.GrepResult{}, invalidSearch(op, "unknown output mode "+strconv.Quote(string(mode)), nil)
	}
	switch {
	case opts.Context < 0 || opts.Context > fs.MaxGrepContext:
		return fs.GrepResult{}, invalidSearch(op, "context must be between 0 and "+strconv.Itoa(fs.MaxGrepContext), nil)
	case opts.Limit < 0:
		return fs.GrepResult{}, invalidSearch(op, "limit must not be negative", nil)
	case opts.MaxLineLength < 0:
		return fs.GrepResult{}, invalidSearch(op, "the line length must not be negative", nil)
	}
	if err := f.searchBase(base, op, false); err != nil {
		return fs.GrepResult{}, err
	}
	var res search.GrepResult
	err := f.as.Do(func() (err error) {
		res, err = search.Grep(ctx, string(base.Key), search.GrepOptions{
			Pattern:       opts.Pattern,
			Literal:       opts.Literal,
			IgnoreCase:    opts.IgnoreCase,
			Mode:          search.Mode(mode),
			Before:        opts.Context,
			After:         opts.Context,
			Glob:          opts.Glob,
			Walk:          f.walkOptions(opts.SearchScope),
			Limit:         cmp.Or(opts.Limit, fs.DefaultSearchLimit),
			MaxLineLength: opts.MaxLineLength,
		})
		return err
	})
	if err != nil {
		return fs.GrepResult{}, searchErr(op, base.DisplayPath, opts.Glob, err)
	}
	unreadable, err := unreadable(op, base.DisplayPath, res.Stats)
	if err != nil {
		return fs.GrepResult{}, err
	}
	out := fs.GrepResult{
		Files:      make([]fs.GrepFile, len(res.Files)),
		Truncated:  res.Truncated,
		WalkCapped: res.Stats.Truncated,
		Searched:   res.Searched,
		Binary:     res.Binary,
		Unreadable: unreadable,
		Denied:     res.Stats.Denied,
	}
	for i, m := range res.Files {
		gf := fs.GrepFile{Path: m.Path, Count: m.Count}
		if mode == fs.GrepContent {
			gf.Lines = make([]fs.GrepLine, len(m.Lines))
			for k, l := range m.Lines {
				gf.Lines[k] = fs.GrepLine{Number: l.Number, Text: l.Text, Match: l.Match}
			}
		}
		out.Files[i] = gf
	}
	return out, nil
}

// searchBase checks the base of a search: present, and a directory, or with
// !dirOnly a directory or a regular file, and one the fence lets the search
// read (a base in the deny-read set is refused, not walked).
func (f *Backend) searchBase(base fs.Target, op string, dirOnly bool) error {
	dp := base.DisplayPath
	st, refusal, err := f.peek(base, op, string(base.Key), true, false)
	if err != nil {
		return osErr(op, "search", dp, err)
	}
	if refusal != nil {
		return refusal
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return nil
	case dirOnly:
		return newErr(fs.CodeNotDirectory, op, dp, nil, "cannot search %q: not a directory", dp)
	case st.Mode&unix.S_IFMT == unix.S_IFREG:
		return nil
	default:
		return notRegular(op, "search", dp)
	}
}

// walkOptions maps a search scope to the walk's options, with the fence's
// gate.
func (f *Backend) walkOptions(s fs.SearchScope) search.WalkOptions {
	return search.WalkOptions{Hidden: s.Hidden, NoIgnore: s.NoIgnore, MaxEntries: fs.MaxSearchEntries, Gate: f.fence.Gate(), As: f.as}
}

// unreadable counts the entries a walk skipped. The base itself failing to
// list is the search's error, not a skipped entry.
func unreadable(op, dp string, st search.WalkStats) (int, error) {
	for _, p := range st.Problems {
		if p.Path == "" {
			return 0, searchErr(op, dp, "", p.Err)
		}
	}
	return len(st.Problems) + st.MoreProblems, nil
}

// searchErr maps an error of internal/search to the seam's: a refused
// pattern (glob is the glob pattern of the call) or option is
// CodeInvalidSearch, the rest as any OS error.
func searchErr(op, dp, glob string, err error) error {
	var se *syntax.Error
	switch {
	case errors.Is(err, search.ErrBadPattern):
		return invalidSearch(op, "invalid glob pattern "+strconv.Quote(glob)+": "+detail(err), err)
	case errors.As(err, &se), errors.Is(err, search.ErrNewlineInPattern):
		return invalidSearch(op, "invalid pattern: "+detail(err), err)
	case errors.Is(err, search.ErrBadOptions):
		return invalidSearch(op, detail(err), err)
	case errors.Is(err, search.ErrDenied):
		// The base passed the fence, then was swapped for a denied one.
		return newErr(fs.CodeReadDenied, op, dp, err, "cannot search %q: it is in the deny-read set", dp)
	}
	return osErr(op, "search", dp, err)
}

// detail is the most specific line of err (errors.Join puts the general
// cause first, the reason after it on a line of its own).
func detail(err error) string {
	msg := err.Error()
	return msg[strings.LastIndexByte(msg, '\n')+1:]
}

func invalidSearch(op, msg string, cause error) *fs.Error {
	return &fs.Error{Code: fs.CodeInvalidSearch, Op: op, Message: msg, Err: cause}
}
