package search

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-go/harness/internal/textfile"
)

// scanBufferBytes is the read buffer of one scanning worker: most source
// files are read in one system call.
const scanBufferBytes = 64 << 10

// MaxLineBytes is the longest line the scanner holds whole: the buffer of a
// worker grows to it and no further, so memory stays bounded whatever the
// file. A longer line is searched one MaxLineBytes window at a time; a match
// straddling two windows is not found, and a matching window is reported as
// the line (cut to the line length cap like any other).
const MaxLineBytes = 1 << 20

// Line is one line of grep output.
type Line struct {
	// Number is the 1-based line number.
	Number int
	// Text is the line without its line ending, invalid UTF-8 replaced by
	// U+FFFD, cut to the line length cap like read's lines.
	Text string
	// Match is false for a context line.
	Match bool
}

// scanConfig is what every worker shares.
type scanConfig struct {
	m             *matcher
	mode          Mode
	before, after int
	maxLineLen    int // code points kept of a line
	maxMatches    int // matching lines after which a file's scan stops
}

// fileResult is the outcome of scanning one file.
type fileResult struct {
	count  int    // matching lines (up to maxMatches)
	lines  []Line // ModeContent only
	binary bool   // skipped: a NUL in the first textfile.BinarySampleBytes bytes
}

// scanner scans files one at a time with a reused buffer.
type scanner struct {
	cfg *scanConfig
	buf []byte

	// per file
	res       fileResult
	cur       int // offset of a line start in buf ...
	curLine   int // ... and its line number
	printed   int // offset after the last line output; lines before it are done
	afterLeft int // context lines still to print after the last match
}

func newScanner(cfg *scanConfig) *scanner {
	return &scanner{cfg: cfg, buf: make([]byte, scanBufferBytes)}
}

// errDone ends a file's scan early: enough matches were found.
var errDone = errors.New("done")

// scan searches r, a regular file of size bytes at open time (0 when
// unknown: the file is read to its end). It reads at most the size known at
// open, so a file growing meanwhile is searched as it was.
func (s *scanner) scan(ctx context.Context, r io.Reader, size int64) (fileResult, error) {
	s.res = fileResult{}
	s.cur, s.curLine, s.printed, s.afterLeft = 0, 1, 0, 0
	buf := s.buf
	n, pos := 0, 0 // valid bytes; next unsearched offset, at a line start
	var total int64
	eof, sampled, skipLine := false, false, false
	for {
		if err := ctx.Err(); err != nil {
			return fileResult{}, err
		}
		for n < len(buf) && !eof {
			k, err := r.Read(buf[n:])
			n += k
			total += int64(k)
			switch {
			case errors.Is(err, io.EOF), err == nil && k == 0, size > 0 && total >= size:
				eof = true
			case err != nil:
				return fileResult{}, err
			}
		}
		if !sampled {
			sampled = true
			if bytes.IndexByte(buf[:min(n, textfile.BinarySampleBytes)], 0) >= 0 {
				return fileResult{binary: true}, nil
			}
		}
		limit := n
		if !eof {
			limit = pos + bytes.LastIndexByte(buf[pos:n], '\n') + 1
		}
		long := false
		if limit == pos && !eof {
			// No whole line in the buffer: make room, or grow, or search a
			// window of an over-long line.
			switch {
			case max(s.backLines(buf, pos, s.cfg.before), s.printed) > 0:
				n, pos = s.shift(buf, n, pos, max(s.backLines(buf, pos, s.cfg.before), s.printed))
				continue
			case len(buf) < MaxLineBytes:
				grown := make([]byte, min(2*len(buf), MaxLineBytes))
				copy(grown, buf[:n])
				s.buf, buf = grown, grown
				continue
			default:
				limit, long = n, true
			}
		}
		skipping := false
		if skipLine {
			// The rest of a line that already matched in an earlier window.
			i := bytes.IndexByte(buf[pos:limit], '\n')
			if i < 0 {
				pos, skipping = limit, true
			} else {
				pos += i + 1
			}
		}
		var err error
		pos, skipLine, err = s.region(buf, pos, limit, eof)
		skipLine = skipLine || skipping
		if errors.Is(err, errDone) {
			return s.res, nil
		}
		if eof {
			return s.res, nil
		}
		keep := pos
		if !long {
			keep = max(s.backLines(buf, pos, s.cfg.before), s.printed)
		}
		n, pos = s.shift(buf, n, pos, keep)
	}
}

// region searches the whole lines buf[pos:limit]; it returns where the next
// search starts and whether a matching line runs on past limit.
func (s *scanner) region(buf []byte, pos, limit int, eof bool) (int, bool, error) {
	cfg := s.cfg
	for pos < limit {
		ls, le, ok := cfg.m.next(buf[pos:limit])
		if !ok {
			break
		}
		ls, le = pos+ls, pos+le
		s.res.count++
		if cfg.mode == ModeFiles {
			return limit, false, errDone
		}
		if cfg.mode == ModeContent {
			s.context(buf, ls)
			s.emit(buf, ls, le, true)
			s.printed, s.afterLeft = min(le+1, limit), cfg.after
		}
		pos = le + 1
		runsOn := le == limit && !eof
		if s.res.count >= cfg.maxMatches {
			return pos, runsOn, errDone
		}
		if runsOn {
			return limit, true, nil
		}
	}
	if cfg.mode == ModeContent {
		s.flushAfter(buf, limit)
	}
	return limit, false, nil
}

// context prints the after-context of the previous match and the
// before-context of the match at line start ls, each line once.
func (s *scanner) context(buf []byte, ls int) {
	s.flushAfter(buf, ls)
	start := max(s.backLines(buf, ls, s.cfg.before), s.printed)
	for start < ls {
		e := start + bytes.IndexByte(buf[start:ls], '\n')
		s.emit(buf, start, e, false)
		start = e + 1
	}
	s.printed = ls
}

// flushAfter prints pending after-context lines that end before limit.
func (s *scanner) flushAfter(buf []byte, limit int) {
	for s.afterLeft > 0 && s.printed < limit {
		e := bytes.IndexByte(buf[s.printed:limit], '\n')
		if e < 0 {
			e = limit - s.printed // the last line, without a line break
		}
		e += s.printed
		s.emit(buf, s.printed, e, false)
		s.printed = min(e+1, limit)
		s.afterLeft--
	}
}

// backLines returns the start of the n-th line before the line start ls.
func (s *scanner) backLines(buf []byte, ls, n int) int {
	for ; n > 0 && ls > 0; n-- {
		ls = bytes.LastIndexByte(buf[:ls-1], '\n') + 1
	}
	return ls
}

// emit appends the line buf[ls:le] with its number.
func (s *scanner) emit(buf []byte, ls, le int, match bool) {
	s.curLine += bytes.Count(buf[s.cur:ls], []byte{'\n'})
	s.cur = ls
	s.res.lines = append(s.res.lines, Line{Number: s.curLine, Text: lineText(buf[ls:le], s.cfg.maxLineLen), Match: match})
}

// shift moves buf[keep:n] to the front, keeping the line count of the cursor.
func (s *scanner) shift(buf []byte, n, pos, keep int) (int, int) {
	keep = max(keep, s.cur)
	if s.cfg.mode == ModeContent {
		s.curLine += bytes.Count(buf[s.cur:keep], []byte{'\n'})
	}
	s.cur = 0
	s.printed = max(s.printed-keep, 0)
	copy(buf, buf[keep:n])
	return n - keep, pos - keep
}

// lineText renders a line: one trailing CR dropped, invalid UTF-8 replaced,
// cut to maxLen code points with read's suffix.
func lineText(b []byte, maxLen int) string {
	b = bytes.TrimSuffix(b, []byte{'\r'})
	// Cut on bytes first so a huge line costs no more than its kept part.
	cut := false
	if len(b) > maxLen*utf8.UTFMax {
		b, cut = b[:maxLen*utf8.UTFMax], true
	}
	t := string(b)
	if !utf8.ValidString(t) {
		t = strings.ToValidUTF8(t, "\uFFFD")
	}
	if cut || utf8.RuneCountInString(t) > maxLen {
		t = cutRunes(t, maxLen) + "... (line truncated to " + strconv.Itoa(maxLen) + " chars)"
	}
	return t
}

// cutRunes returns the first n code points of s.
func cutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
