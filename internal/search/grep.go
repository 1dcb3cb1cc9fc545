package search

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path"
	"runtime"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// DefaultGrepLimit is the number of results Grep returns when
// GrepOptions.Limit is zero.
const DefaultGrepLimit = 1000

// DefaultMaxLineLength is the code points kept of an output line when
// GrepOptions.MaxLineLength is zero: read's default.
const DefaultMaxLineLength = 2000

// MaxContextLines bounds GrepOptions.Before and After.
const MaxContextLines = 100

// aheadPerWorker is how many files the walk may run ahead of the file whose
// result is due next, per worker: enough to keep every worker busy behind a
// slow file, few enough to bound the results held out of order.
const aheadPerWorker = 64

// Mode selects what Grep reports.
type Mode string

// The output modes.
const (
	// ModeFiles reports the paths of the files that match.
	ModeFiles Mode = "files_with_matches"
	// ModeCount reports each matching file with its number of matching lines.
	ModeCount Mode = "count"
	// ModeContent reports the matching lines with their numbers, and context.
	ModeContent Mode = "content"
)

// ErrBadOptions is returned (wrapped) for options out of range.
var ErrBadOptions = errors.New("invalid search options")

// GrepOptions tunes Grep.
type GrepOptions struct {
	// Pattern is an RE2 regular expression (Go's regexp syntax) matched
	// against one line at a time, or a literal when Literal is set.
	Pattern string
	// Literal searches for Pattern as a plain string.
	Literal bool
	// IgnoreCase matches letters in either case (Unicode simple folding).
	IgnoreCase bool
	// Mode is what to report; "" means ModeFiles.
	Mode Mode
	// Before and After are context lines around each match (ModeContent),
	// at most MaxContextLines each.
	Before, After int
	// Glob, when set, keeps only files whose relative path matches this
	// doublestar pattern; a pattern without "/" matches the name at any
	// depth ("*.go").
	Glob string
	// Walk tunes the walk (hidden files, .gitignore, entry cap).
	Walk WalkOptions
	// Limit caps the results: files (ModeFiles, ModeCount) or matching lines
	// (ModeContent); zero means DefaultGrepLimit.
	Limit int
	// MaxLineLength is the code points kept of an output line; zero means
	// DefaultMaxLineLength. Longer lines end "... (line truncated to N
	// chars)", as read's do.
	MaxLineLength int
	// Workers is the number of files scanned at once; zero means GOMAXPROCS.
	Workers int
}

// FileMatch is one file with matches.
type FileMatch struct {
	// Path is slash-separated and relative to the root; for a root that is a
	// file, it is the file's name.
	Path string
	// Count is the number of matching lines (ModeCount), or of those in
	// Lines (ModeContent).
	Count int
	// Lines are the matching and context lines in order (ModeContent).
	Lines []Line
}

// GrepResult is what Grep found.
type GrepResult struct {
	// Files are the files with matches in walk order (depth first, byte
	// order of names), whatever the number of workers.
	Files []FileMatch
	// Truncated reports whether results beyond Limit exist (the last file's
	// lines may be cut), or the walk stopped at its entry cap.
	Truncated bool
	// Searched is the number of files scanned; Binary the number skipped
	// as binary (a NUL byte in their first 8 KiB).
	Searched, Binary int
	// Stats describe the walk; files that could not be opened or read are
	// among its problems.
	Stats WalkStats
}

// Grep searches the regular files beneath root (an absolute canonical path
// of a directory, or of a file to search alone) for lines matching
// opts.Pattern. Files are scanned by opts.Workers goroutines through a
// bounded buffer each (MaxLineBytes at most), and results come back in walk
// order. Errors: *syntax.Error or ErrNewlineInPattern for a bad pattern,
// ErrBadPattern or ErrBadOptions (wrapped) for bad options, *os.PathError
// when root cannot be opened, the context's error when it is cancelled.
func Grep(ctx context.Context, root string, opts GrepOptions) (GrepResult, error) {
	cfg, err := grepConfig(&opts)
	if err != nil {
		return GrepResult{}, err
	}
	st, err := os.Lstat(root)
	if err != nil {
		return GrepResult{}, err
	}
	if st.Mode().IsRegular() {
		return grepFile(ctx, root, cfg, opts.Limit, opts.Walk.Gate)
	}
	d, err := dirfd.OpenBeneath(root)
	if err != nil {
		return GrepResult{}, err
	}
	defer func() { _ = d.Close() }()
	var glob string
	if opts.Glob != "" {
		if glob, err = globPattern(opts.Glob); err != nil {
			return GrepResult{}, err
		}
	}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := opts.Workers
	type job struct {
		rel  string
		res  fileResult
		err  error
		done chan struct{}
	}
	jobs := make(chan *job, workers)
	order := make(chan *job, workers*aheadPerWorker)
	var stats WalkStats
	var walkErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(jobs)
		defer close(order)
		walkErr = opts.Walk.As.Do(func() (err error) {
			stats, err = walkDir(ctx, d, root, opts.Walk, func(e Entry) error {
				if glob != "" && !doublestar.MatchUnvalidated(glob, e.Rel) {
					return nil
				}
				j := &job{rel: e.Rel, done: make(chan struct{})}
				select {
				case order <- j:
				case <-ctx.Done():
					return ctx.Err()
				}
				select {
				case jobs <- j:
				case <-ctx.Done():
					close(j.done) // queued in order, never scanned
					return ctx.Err()
				}
				return nil
			})
			return err
		})
	})
	for range workers {
		wg.Go(func() {
			s := newScanner(cfg)
			scan := func(j *job) {
				if ctx.Err() == nil {
					j.res, j.err = scanAt(ctx, s, d, j.rel, opts.Walk.Gate, true)
				}
				close(j.done)
			}
			err := opts.Walk.As.Do(func() error {
				for j := range jobs {
					scan(j)
				}
				return nil
			})
			// Fail closed: a worker that cannot take the identity scans
			// nothing; each of its jobs is a problem.
			for j := range jobs {
				j.err = err
				close(j.done)
			}
		})
	}

	res := GrepResult{Files: []FileMatch{}}
	var problems []Problem
	denied := 0 // files the gate refused once opened
	budget := opts.Limit
	for j := range order {
		<-j.done
		if budget < 0 {
			continue // draining after the cut
		}
		if errors.Is(j.err, ErrDenied) {
			denied++
			continue
		}
		if j.err != nil {
			if ctx.Err() == nil {
				problems = append(problems, Problem{Path: j.rel, Err: j.err})
			}
			continue
		}
		if j.res.binary {
			res.Binary++
			continue
		}
		res.Searched++
		if j.res.count == 0 {
			continue
		}
		if budget = res.add(j.rel, j.res, cfg, budget); budget < 0 {
			res.Truncated = true
			cancel()
		}
	}
	wg.Wait()
	if walkErr != nil && !errors.Is(walkErr, context.Canceled) {
		return GrepResult{}, walkErr
	}
	if err := parent.Err(); err != nil {
		return GrepResult{}, err
	}
	res.Stats = stats
	res.Stats.Denied += denied
	res.Truncated = res.Truncated || stats.Truncated
	for _, p := range problems {
		if len(res.Stats.Problems) < MaxProblems {
			res.Stats.Problems = append(res.Stats.Problems, p)
		} else {
			res.Stats.MoreProblems++
		}
	}
	return res, nil
}

// add appends a file's result within the budget (results still allowed) and
// returns the budget left, negative when something was cut.
func (r *GrepResult) add(rel string, fr fileResult, cfg *scanConfig, budget int) int {
	if budget == 0 {
		return -1
	}
	fm := FileMatch{Path: rel}
	switch cfg.mode {
	case ModeFiles:
		budget--
	case ModeCount:
		fm.Count = fr.count
		budget--
	case ModeContent:
		fm.Count, fm.Lines = fr.count, fr.lines
		if fr.count > budget {
			fm.Count, fm.Lines = budget, cutLines(fr.lines, budget, cfg.after)
			r.Files = append(r.Files, fm)
			return -1
		}
		budget -= fr.count
	}
	r.Files = append(r.Files, fm)
	return budget
}

// cutLines keeps the first n (at least 1) matching lines, and the context
// lines right after the last one kept, up to after of them.
func cutLines(lines []Line, n, after int) []Line {
	for i, l := range lines {
		if !l.Match {
			continue
		}
		if n--; n == 0 {
			end := i + 1
			for end < len(lines) && end-i <= after && !lines[end].Match && lines[end].Number == lines[end-1].Number+1 {
				end++
			}
			return lines[:end]
		}
	}
	return lines
}

// grepConfig validates opts, fills its defaults and compiles the pattern.
func grepConfig(opts *GrepOptions) (*scanConfig, error) {
	if opts.Mode == "" {
		opts.Mode = ModeFiles
	}
	switch opts.Mode {
	case ModeFiles, ModeCount, ModeContent:
	default:
		return nil, errors.Join(ErrBadOptions, errors.New("unknown output mode "+string(opts.Mode)))
	}
	if opts.Before < 0 || opts.After < 0 || opts.Before > MaxContextLines || opts.After > MaxContextLines {
		return nil, errors.Join(ErrBadOptions, errors.New("context lines out of range"))
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultGrepLimit
	}
	if opts.MaxLineLength <= 0 {
		opts.MaxLineLength = DefaultMaxLineLength
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	m, err := compile(opts.Pattern, opts.Literal, opts.IgnoreCase)
	if err != nil {
		return nil, err
	}
	cfg := &scanConfig{m: m, mode: opts.Mode, maxLineLen: opts.MaxLineLength, maxMatches: math.MaxInt}
	switch opts.Mode {
	case ModeFiles:
		cfg.maxMatches = 1
	case ModeContent:
		cfg.before, cfg.after = opts.Before, opts.After
		cfg.maxMatches = opts.Limit + 1
	}
	return cfg, nil
}

// scanAt opens rel beneath d without following a symlink (non-blocking,
// fstat on the descriptor) and scans it if it is still a regular file the
// gate (nil: none) does not refuse (ErrDenied when it does): a walk entry
// (entry) by Gate.RefuseEntry, the single file a grep searches by
// Gate.Refuse.
func scanAt(ctx context.Context, s *scanner, d *dirfd.Dir, rel string, gate Gate, entry bool) (fileResult, error) {
	fd, st, err := d.OpenReadFDNoSymlinks(rel)
	if err != nil {
		return fileResult{}, err
	}
	defer func() { _ = unix.Close(fd) }()
	if !dirfd.IsRegular(&st) {
		return fileResult{}, nil // replaced since it was listed
	}
	if gate != nil {
		refuse := gate.Refuse
		if entry {
			refuse = gate.RefuseEntry
		}
		if refuse(fd, &st, joinAbs(d.Path(), rel)) {
			return fileResult{}, &os.PathError{Op: "read", Path: rel, Err: ErrDenied}
		}
	}
	res, err := s.scan(ctx, fdReader(fd), st.Size)
	if err != nil {
		return fileResult{}, &os.PathError{Op: "read", Path: rel, Err: err}
	}
	return res, nil
}

// fdReader reads a descriptor of a regular file (reads never block there).
type fdReader int

func (fd fdReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(fd), p)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// grepFile searches the single regular file at root, unless gate refuses
// it (ErrDenied).
func grepFile(ctx context.Context, root string, cfg *scanConfig, limit int, gate Gate) (GrepResult, error) {
	d, err := dirfd.OpenBeneath(path.Dir(root))
	if err != nil {
		return GrepResult{}, err
	}
	defer func() { _ = d.Close() }()
	name := path.Base(root)
	fr, err := scanAt(ctx, newScanner(cfg), d, name, gate, false)
	if err != nil {
		return GrepResult{}, err
	}
	res := GrepResult{Files: []FileMatch{}, Stats: WalkStats{Files: 1}}
	switch {
	case fr.binary:
		res.Binary = 1
	default:
		res.Searched = 1
		if fr.count > 0 && res.add(name, fr, cfg, limit) < 0 {
			res.Truncated = true
		}
	}
	return res, nil
}
