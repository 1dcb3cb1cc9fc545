//go:build linux

package fsbackend_test

import (
	"bytes"
	"context"
	"iter"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// streamChunk is the StreamText chunk size the cross-chunk cases aim at.
const streamChunk = 64 << 10

// streamResult is everything a StreamText iteration produced.
type streamResult struct {
	chunks   []string
	err      error
	afterErr int // pairs yielded after the error: must be 0
	emptyOK  int // text pairs with an empty chunk: must be 0
}

func (r streamResult) text() string { return strings.Join(r.chunks, "") }

// drainStream consumes seq to its end.
func drainStream(seq iter.Seq2[string, error]) streamResult {
	var r streamResult
	for chunk, err := range seq {
		switch {
		case r.err != nil:
			r.afterErr++
		case err != nil:
			r.err = err
			if chunk != "" {
				r.afterErr++ // an error pair must carry an empty chunk
			}
		case chunk == "":
			r.emptyOK++
		default:
			r.chunks = append(r.chunks, chunk)
		}
	}
	return r
}

// within runs fn and fails the test if it has not returned after d.
func within(t *testing.T, d time.Duration, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s blocked for more than %v", what, d)
		return nil
	}
}

// writeBytes writes b to dir/name and returns the resolved target.
func writeBytes(t *testing.T, f *fslocal.FileSystem, dir, name string, b []byte) fs.Target {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	return resolve(t, f, name)
}

func TestReadTextContent(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	ctx := context.Background()

	var lines []string
	for i := range 50 {
		lines = append(lines, strings.Repeat(string(rune('a'+i%26)), 3000))
	}
	manyLines := strings.Join(lines, "\n") + "\n"
	require.Greater(t, len(manyLines), 2*streamChunk)

	// A 4-byte rune straddling the first 64 KiB chunk boundary.
	split := strings.Repeat("a", streamChunk-1) + "😀" + "tail"
	// 2-byte runes at an odd offset, so many chunk boundaries may fall mid-rune.
	twoByte := "x" + strings.Repeat("é", 3*streamChunk/2)

	cases := []struct {
		name    string
		content string
		chunks  int // minimum number of stream chunks
	}{
		{"L-27 LF text reads byte for byte", "one\ntwo\nthree", 1},
		{"L-27 CRLF bytes are preserved, not normalized", "one\r\ntwo\r\nthree\r\n", 1},
		{"L-27 a lone CR is preserved", "a\rb\r", 1},
		{"L-27 an empty file reads as empty text", "", 0},
		{"L-35 decision: a leading UTF-8 BOM is kept byte for byte", "\uFEFFhello\nworld\n", 1},
		{"L-35 decision: a BOM-only file reads as the BOM", "\uFEFF", 1},
		{"L-28 a ~150 KB file of 50 lines of 3000 chars streams in several chunks", manyLines, 3},
		{"L-36 a 4-byte rune split across the 64 KiB chunk boundary", split, 2},
		{"L-36 2-byte runes across every chunk boundary", twoByte, 3},
		{"L-34 a NUL right after the 8192-byte sample reads fine", strings.Repeat("a", 8192) + "\x00tail", 1},
		{"L-34 a NUL far after the sample, in a later chunk, reads fine", strings.Repeat("a", streamChunk+10) + "\x00", 2},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "c" + string(rune('a'+i)) + ".txt"
			tg := writeBytes(t, f, dir, name, []byte(tc.content))

			text, err := f.ReadText(ctx, tg)
			require.NoError(t, err)
			assert.True(t, text == tc.content, "L-27 ReadText equals the bytes on disk")
			assert.Equal(t, readFile(t, filepath.Join(dir, name)), text)

			r := drainStream(f.StreamText(ctx, tg))
			require.NoError(t, r.err)
			assert.Zero(t, r.afterErr)
			assert.Zero(t, r.emptyOK, "no empty text chunks")
			assert.True(t, r.text() == text, "A-04 StreamText concatenated equals ReadText")
			assert.GreaterOrEqual(t, len(r.chunks), tc.chunks)
			for j, c := range r.chunks {
				assert.Truef(t, utf8.ValidString(c), "chunk %d splits a code point", j)
				assert.LessOrEqual(t, len(c), streamChunk+utf8.UTFMax, "chunk %d is bounded", j)
			}
		})
	}
}

func TestReadTextErrors(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "sub/", "dangling => nowhere", "afile: x")
	ctx := context.Background()

	nulAt := func(i, n int) []byte {
		b := bytes.Repeat([]byte("a"), n)
		b[i] = 0
		return b
	}
	dp := func(name string) string { return dir + "/" + name }

	cases := []struct {
		name    string
		file    string
		content []byte // written when not nil
		target  *fs.Target
		want    *fs.Error
		msg     string
	}{
		{
			name: "L-29 a missing file is FS_NOT_FOUND", file: "missing.txt", want: fs.ErrNotFound,
			msg: `cannot read "` + dp("missing.txt") + `": not found`,
		},
		{
			name: "L-29 a dangling symlink is FS_NOT_FOUND", file: "dangling", want: fs.ErrNotFound,
			msg: `cannot read "` + dp("dangling") + `": not found`,
		},
		{
			name: "L-29 a directory is FS_NOT_REGULAR_FILE", file: "sub", want: fs.ErrNotRegularFile,
			msg: `cannot read "` + dp("sub") + `": not a regular file`,
		},
		{
			name: "L-24 a target under a regular file is FS_NOT_FOUND", target: &fs.Target{Key: fs.TargetKey(dp("afile/c")), DisplayPath: dp("afile/c")},
			want: fs.ErrNotFound, msg: `cannot read "` + dp("afile/c") + `": a parent path segment is not a directory`,
		},
		{
			name: "L-30 bytes 68 00 69 are FS_NOT_TEXT binary file", file: "nul.bin", content: []byte{0x68, 0x00, 0x69},
			want: fs.ErrNotText, msg: `cannot read "` + dp("nul.bin") + `": binary file`,
		},
		{
			name: "L-30 bytes 68 FF 69 are FS_NOT_TEXT invalid UTF-8 text", file: "ff.bin", content: []byte{0x68, 0xFF, 0x69},
			want: fs.ErrNotText, msg: `cannot read "` + dp("ff.bin") + `": invalid UTF-8 text`,
		},
		{
			name: "L-34 a NUL at the last byte of the 8192-byte sample is binary", file: "nul8191.bin", content: nulAt(8191, 9000),
			want: fs.ErrNotText, msg: `cannot read "` + dp("nul8191.bin") + `": binary file`,
		},
		{
			name: "L-30 a NUL in the sample wins over earlier invalid UTF-8", file: "both.bin", content: append([]byte{0xFF}, nulAt(5000, 6000)...),
			want: fs.ErrNotText, msg: `cannot read "` + dp("both.bin") + `": binary file`,
		},
		{
			name: "L-30 invalid UTF-8 far after the first chunk is FS_NOT_TEXT", file: "late.bin", content: append(bytes.Repeat([]byte("a"), 100_000), 0xFF, 'z'),
			want: fs.ErrNotText, msg: `cannot read "` + dp("late.bin") + `": invalid UTF-8 text`,
		},
		{
			name: "L-36 an incomplete trailing sequence at EOF is FS_NOT_TEXT", file: "trunc.txt", content: []byte("abc\xF0\x9F\x98"),
			want: fs.ErrNotText, msg: `cannot read "` + dp("trunc.txt") + `": invalid UTF-8 text`,
		},
		{
			name: "L-36 an incomplete sequence at EOF right after a chunk boundary is FS_NOT_TEXT", file: "trunc2.txt",
			content: append(bytes.Repeat([]byte("a"), streamChunk-1), 0xF0, 0x9F),
			want:    fs.ErrNotText, msg: `cannot read "` + dp("trunc2.txt") + `": invalid UTF-8 text`,
		},
		{
			name: "L-30 a UTF-16 surrogate encoded in UTF-8 is FS_NOT_TEXT", file: "surrogate.txt", content: []byte("a\xED\xA0\x80b"),
			want: fs.ErrNotText, msg: `cannot read "` + dp("surrogate.txt") + `": invalid UTF-8 text`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tg fs.Target
			switch {
			case tc.target != nil:
				tg = *tc.target
			case tc.content != nil:
				tg = writeBytes(t, f, dir, tc.file, tc.content)
			default:
				tg = resolve(t, f, tc.file)
			}

			text, err := f.ReadText(ctx, tg)
			expectFSErr(t, err, tc.want, tc.msg)
			assert.Empty(t, text)

			r := drainStream(f.StreamText(ctx, tg))
			expectFSErr(t, r.err, tc.want, tc.msg)
			assert.Zero(t, r.afterErr, "the error is the last pair, with an empty chunk")
			assert.Zero(t, r.emptyOK)
		})
	}
}

func TestReadAborted(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	tg := writeBytes(t, f, dir, "a.txt", []byte("hello"))

	t.Run("L-31 a live, uncancelled context reads normally", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		text, err := f.ReadText(ctx, tg)
		require.NoError(t, err)
		assert.Equal(t, "hello", text)
		r := drainStream(f.StreamText(ctx, tg))
		require.NoError(t, r.err)
		assert.Equal(t, "hello", r.text())
		b, err := f.ReadBytes(ctx, tg, 5)
		require.NoError(t, err)
		assert.Equal(t, []byte("hello"), b)
	})

	ctxs := []struct {
		name string
		ctx  func() context.Context
	}{
		{"L-31 pre-cancelled", cancelled},
		{"L-32 approximated: cancelled after the entry check, while the read is pending", func() context.Context { return abortAfterChecks(1) }},
	}
	for _, c := range ctxs {
		t.Run(c.name+": ReadText is FS_ABORTED read aborted", func(t *testing.T) {
			text, err := f.ReadText(c.ctx(), tg)
			expectFSErr(t, err, fs.ErrAborted, "read aborted")
			assert.Empty(t, text)
		})
		t.Run(c.name+": StreamText yields FS_ABORTED read aborted", func(t *testing.T) {
			r := drainStream(f.StreamText(c.ctx(), tg))
			expectFSErr(t, r.err, fs.ErrAborted, "read aborted")
			assert.Empty(t, r.chunks)
			assert.Zero(t, r.afterErr)
		})
		t.Run(c.name+": L-41 ReadBytes is FS_ABORTED read aborted", func(t *testing.T) {
			b, err := f.ReadBytes(c.ctx(), tg, 100)
			expectFSErr(t, err, fs.ErrAborted, "read aborted")
			assert.Nil(t, b)
		})
	}

	t.Run("L-31 a pre-cancelled context wins over a missing file", func(t *testing.T) {
		_, err := f.ReadText(cancelled(), resolve(t, f, "missing"))
		expectFSErr(t, err, fs.ErrAborted, "read aborted")
	})
}

func TestStreamTextCancelledAfterFirstChunk(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	tg := writeBytes(t, f, dir, "big.txt", bytes.Repeat([]byte("0123456789abcdef"), 256<<10/16))

	t.Run("L-33 a 256 KiB stream cancelled after the first chunk yields FS_ABORTED", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var chunks []string
		var errs []error
		for chunk, err := range f.StreamText(ctx, tg) {
			if err != nil {
				errs = append(errs, err)
				assert.Empty(t, chunk)
				continue
			}
			chunks = append(chunks, chunk)
			cancel()
		}
		assert.Len(t, chunks, 1, "no chunk after the cancel")
		require.Len(t, errs, 1, "the abort is yielded exactly once")
		expectFSErr(t, errs[0], fs.ErrAborted, "read aborted")
		assert.Less(t, len(chunks[0]), 256<<10)
	})

	t.Run("L-33 breaking out of the stream early stops it without an error", func(t *testing.T) {
		n := 0
		for _, err := range f.StreamText(context.Background(), tg) {
			require.NoError(t, err)
			n++
			break
		}
		assert.Equal(t, 1, n)
	})
}

func TestReadBytes(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fixture.Build(t, dir, "sub/", "four.txt: abcd", "empty")
	ctx := context.Background()
	raw := []byte{0x68, 0x00, 0x69, 0xFF}
	rawTg := writeBytes(t, f, dir, "raw.bin", raw)
	big := bytes.Repeat([]byte{0, 1, 2, 0xFE, 0xFF}, 200<<10/5)
	bigTg := writeBytes(t, f, dir, "big.bin", big)
	dp := func(name string) string { return dir + "/" + name }

	ok := []struct {
		name string
		tg   fs.Target
		max  int64
		want []byte
	}{
		{"L-37 bytes 68 00 69 FF round-trip", rawTg, 4, raw},
		{"L-37 bytes 68 00 69 FF round-trip under a larger limit", rawTg, 1 << 20, raw},
		{"A-05 the largest int64 limit does not overflow", rawTg, math.MaxInt64, raw},
		{"A-05 L-38 a 4-byte file with maxBytes 4 (inclusive) returns 4 bytes", resolve(t, f, "four.txt"), 4, []byte("abcd")},
		{"A-05 an empty file with maxBytes 0 returns no bytes", resolve(t, f, "empty"), 0, []byte{}},
		{"A-05 an empty file with a negative maxBytes returns no bytes", resolve(t, f, "empty"), -1, []byte{}},
		{"A-05 a 200 KiB binary file read across chunks at exactly its size", bigTg, int64(len(big)), big},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			b, err := f.ReadBytes(ctx, tc.tg, tc.max)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(tc.want, b), "got %d bytes, want %d", len(b), len(tc.want))
		})
	}

	bad := []struct {
		name string
		tg   fs.Target
		max  int64
		want *fs.Error
		msg  string
	}{
		{
			"A-05 L-38 a 4-byte file with maxBytes 3 is FS_TOO_LARGE", resolve(t, f, "four.txt"), 3, fs.ErrTooLarge,
			`cannot read "` + dp("four.txt") + `": 4 bytes exceeds the 3-byte limit`,
		},
		{
			"A-05 a 4-byte file with maxBytes 0 is FS_TOO_LARGE", resolve(t, f, "four.txt"), 0, fs.ErrTooLarge,
			`cannot read "` + dp("four.txt") + `": 4 bytes exceeds the 0-byte limit`,
		},
		{
			"A-05 a negative maxBytes counts as 0", resolve(t, f, "four.txt"), -5, fs.ErrTooLarge,
			`cannot read "` + dp("four.txt") + `": 4 bytes exceeds the 0-byte limit`,
		},
		{"A-05 a 200 KiB file one byte over the limit is FS_TOO_LARGE, never truncated", bigTg, int64(len(big)) - 1, fs.ErrTooLarge, ""},
		{
			"L-40 a missing file is FS_NOT_FOUND", resolve(t, f, "missing"), 10, fs.ErrNotFound,
			`cannot read "` + dp("missing") + `": not found`,
		},
		{
			"L-40 a directory is FS_NOT_REGULAR_FILE", resolve(t, f, "sub"), 10, fs.ErrNotRegularFile,
			`cannot read "` + dp("sub") + `": not a regular file`,
		},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			b, err := f.ReadBytes(ctx, tc.tg, tc.max)
			expectFSErr(t, err, tc.want, tc.msg)
			assert.Nil(t, b)
		})
	}

	t.Run("L-37 ReadText and StreamText refuse what ReadBytes returns", func(t *testing.T) {
		_, err := f.ReadText(ctx, rawTg)
		expectFSErr(t, err, fs.ErrNotText, `cannot read "`+dp("raw.bin")+`": binary file`)
		expectFSErr(t, drainStream(f.StreamText(ctx, rawTg)).err, fs.ErrNotText, `cannot read "`+dp("raw.bin")+`": binary file`)
	})
}

// TestReadBytesGrowthAfterSizeCheck approximates L-39 (a file that grows
// after the size preflight) with a /proc file: fstat reports size 0, so the
// preflight passes, but the content is longer than the limit.
func TestReadBytesGrowthAfterSizeCheck(t *testing.T) {
	const proc = "/proc/self/status"
	fi, err := os.Stat(proc)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		t.Skipf("%s is not a regular file reporting size 0 here (%v, %v)", proc, fi, err)
	}
	f, _ := newFS(t, fslocal.Config{})
	ctx := context.Background()
	tg := resolve(t, f, proc)
	require.Equal(t, proc, tg.DisplayPath)

	t.Run("L-39 content beyond the limit despite a small stat size is FS_TOO_LARGE content exceeds", func(t *testing.T) {
		b, err := f.ReadBytes(ctx, tg, 10)
		expectFSErr(t, err, fs.ErrTooLarge, `cannot read "/proc/self/status": content exceeds the 10-byte limit`)
		assert.Nil(t, b)
	})

	t.Run("L-39 the whole content is read when it fits, whatever the stat size", func(t *testing.T) {
		b, err := f.ReadBytes(ctx, tg, 1<<20)
		require.NoError(t, err)
		assert.Greater(t, len(b), 100)
		assert.Contains(t, string(b), "Name:")
	})

	t.Run("L-27 ReadText and StreamText read past a zero stat size", func(t *testing.T) {
		text, err := f.ReadText(ctx, tg)
		require.NoError(t, err)
		assert.Contains(t, text, "Name:")
		r := drainStream(f.StreamText(ctx, tg))
		require.NoError(t, r.err)
		assert.Contains(t, r.text(), "Name:")
	})
}

// TestReadNeverBlocksOnSpecialFiles is the Done-when criterion of spec
// decision 7: reads refuse non-regular files by fstat on a non-blocking
// descriptor and never hang.
func TestReadNeverBlocksOnSpecialFiles(t *testing.T) {
	f, dir := newFS(t, fslocal.Config{})
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o644))
	ctx := context.Background()

	for _, p := range []string{fifo, "/dev/zero", "/dev/null"} {
		if _, err := os.Stat(p); err != nil {
			t.Logf("%s unavailable: %v", p, err)
			continue
		}
		tg := resolve(t, f, p)
		msg := `cannot read "` + p + `": not a regular file`
		name := strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "-")
		if p == fifo {
			name = "a FIFO with no writer"
		}
		ops := []struct {
			op string
			fn func() error
		}{
			{"ReadText", func() error { _, err := f.ReadText(ctx, tg); return err }},
			{"StreamText", func() error { return drainStream(f.StreamText(ctx, tg)).err }},
			{"ReadBytes", func() error { _, err := f.ReadBytes(ctx, tg, 1<<20); return err }},
		}
		for _, o := range ops {
			t.Run("decision 7 "+o.op+" on "+name+" returns FS_NOT_REGULAR_FILE within 1s", func(t *testing.T) {
				err := within(t, time.Second, o.op, o.fn)
				expectFSErr(t, err, fs.ErrNotRegularFile, msg)
			})
		}
	}
}
