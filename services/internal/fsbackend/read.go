package fsbackend

import (
	"context"
	"errors"
	"io"
	"iter"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/textfile"
	"github.com/dsh-go/harness/services/fs"
)

// readChunkBytes is the unit of every read loop: the context is checked
// between chunks and StreamText yields chunks of at most this size (spec
// section 0, "diff basis read chunk").
const readChunkBytes = 64 << 10

// readTextMaxBytes caps ReadText whatever size the file reports: a procfs
// file reports 0 and may hold gigabytes (/proc/self/pagemap). Larger texts
// are read with StreamText.
const readTextMaxBytes = 64 << 20

// openRegular opens target for reading without blocking and refuses anything
// but a regular file by fstat on the descriptor (spec decision 7), a
// kernel stream whose reads would consume it (see consumes), and what the
// fence's Read refuses (the deny-read set, decided on the descriptor). The
// open runs with the backend's filesystem identity (Settings.NewOwner).
func (f *Backend) openRegular(op, verb string, target fs.Target) (*dirfd.File, unix.Stat_t, error) {
	rel, _ := f.host.Rel(string(target.Key))
	var file *dirfd.File
	var st unix.Stat_t
	err := f.as.Do(func() (err error) {
		file, st, err = f.host.OpenRead(rel)
		return err
	})
	if err != nil {
		return nil, st, osErr(op, verb, target.DisplayPath, err)
	}
	if !dirfd.IsRegular(&st) {
		_ = file.Close()
		return nil, st, notRegular(op, verb, target.DisplayPath)
	}
	if consumes(file, &st, string(target.Key)) {
		_ = file.Close()
		return nil, st, consumingStream(op, verb, target.DisplayPath)
	}
	if err := f.fence.Read(target, op, file.Fd(), &st, false); err != nil {
		_ = file.Close()
		return nil, st, err
	}
	return file, st, nil
}

// consumes reports whether the open file, whose fstat is st and whose
// canonical path is key, is one of consumingStreams. Such files report size
// 0, so others cost no fstatfs.
func consumes(file *dirfd.File, st *unix.Stat_t, key string) bool {
	if st.Size != 0 {
		return false
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(file.Fd(), &sfs); err != nil {
		return false
	}
	return slices.Contains(consumingStreams[int64(sfs.Type)], filepath.Base(key)) //nolint:unconvert // Type is narrower on other architectures
}

// consumingStream is the refusal of a file consumes reports: CodeNotRegularFile.
func consumingStream(op, verb, dp string) *fs.Error {
	return newErr(fs.CodeNotRegularFile, op, dp, nil,
		"cannot %s %q: not a regular file (a kernel stream that reading would consume)", verb, dp)
}

// ReadText returns the whole file as text, byte for byte (L-27, L-29..L-35);
// a file starting with a UTF-16 byte-order mark is converted to UTF-8, the
// mark kept as U+FEFF (spec difference 10). A NUL in the first 8192 bytes
// is CodeNotText `binary file`; invalid UTF-8 is CodeNotText `invalid UTF-8
// text`, invalid UTF-16 `invalid UTF-16 text`. It reads at most 64 MiB
// whatever size the file reports; more is CodeTooLarge. Errors also:
// CodeNotFound, CodeNotRegularFile (also a kernel stream that reading would
// consume, such as /proc/kmsg), CodePermissionDenied, CodeAborted,
// CodeIOError.
func (f *Backend) ReadText(ctx context.Context, target fs.Target) (string, error) {
	if err := checkCtx(ctx, "read"); err != nil {
		return "", err
	}
	file, st, err := f.openRegular("read", "read", target)
	if err != nil {
		return "", err
	}
	defer file.Close() //nolint:errcheck // read-only descriptor
	b, err := readAll(ctx, file, min(st.Size, readTextMaxBytes), readTextMaxBytes+1)
	if err != nil {
		return "", osErr("read", "read", target.DisplayPath, err)
	}
	if len(b) > readTextMaxBytes {
		return "", newErr(fs.CodeTooLarge, "read", target.DisplayPath, nil,
			"cannot read %q: content exceeds the %d-byte limit", target.DisplayPath, readTextMaxBytes)
	}
	text, _, err := textfile.Decode(b, textfile.BinarySampleBytes)
	if err != nil {
		return "", newErr(fs.CodeNotText, "read", target.DisplayPath, err, "cannot read %q: %v", target.DisplayPath, err)
	}
	return text, nil
}

// StreamText yields the file's text in chunks that never split a code point,
// of at most 64 KiB of the file's bytes (UTF-16 grows by half as UTF-8); concatenated they equal ReadText (A-04, L-28, L-33,
// L-34, L-36). Errors are those of ReadText, yielded once as the last pair.
// Memory stays bounded by the chunk size whatever the file size.
func (f *Backend) StreamText(ctx context.Context, target fs.Target) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := checkCtx(ctx, "read"); err != nil {
			yield("", err)
			return
		}
		file, _, err := f.openRegular("read", "read", target)
		if err != nil {
			yield("", err)
			return
		}
		defer file.Close() //nolint:errcheck // read-only descriptor
		var dec textfile.Decoder
		buf := make([]byte, readChunkBytes)
		notText := func(err error) error {
			return newErr(fs.CodeNotText, "read", target.DisplayPath, err, "cannot read %q: %v", target.DisplayPath, err)
		}
		for {
			if err := checkCtx(ctx, "read"); err != nil {
				yield("", err)
				return
			}
			n, rerr := file.Read(buf)
			if n > 0 {
				text, err := dec.Feed(buf[:n])
				if err != nil {
					yield("", notText(err))
					return
				}
				if text != "" && !yield(text, nil) {
					return
				}
			}
			if errors.Is(rerr, io.EOF) {
				if err := dec.Close(); err != nil {
					yield("", notText(err))
				}
				return
			}
			if rerr != nil {
				yield("", osErr("read", "read", target.DisplayPath, rerr))
				return
			}
		}
	}
}

// ReadBytes returns the raw bytes, NULs and invalid UTF-8 included, when the
// file holds at most maxBytes bytes (inclusive; a negative maxBytes is 0);
// otherwise CodeTooLarge, never a truncated result. It never buffers more
// than maxBytes+1 bytes, even when the file grows after the size check
// (A-05, L-37..L-41).
func (f *Backend) ReadBytes(ctx context.Context, target fs.Target, maxBytes int64) ([]byte, error) {
	if err := checkCtx(ctx, "read"); err != nil {
		return nil, err
	}
	maxBytes = max(maxBytes, 0)
	file, st, err := f.openRegular("read", "read", target)
	if err != nil {
		return nil, err
	}
	defer file.Close() //nolint:errcheck // read-only descriptor
	dp := target.DisplayPath
	if st.Size > maxBytes {
		return nil, newErr(fs.CodeTooLarge, "read", dp, nil,
			"cannot read %q: %d bytes exceeds the %d-byte limit", dp, st.Size, maxBytes)
	}
	b, err := readAll(ctx, file, st.Size, maxBytes+1)
	if err != nil {
		return nil, osErr("read", "read", dp, err)
	}
	if int64(len(b)) > maxBytes {
		return nil, newErr(fs.CodeTooLarge, "read", dp, nil,
			"cannot read %q: content exceeds the %d-byte limit", dp, maxBytes)
	}
	return b, nil
}

// readAll reads file to EOF in chunks, checking ctx between them; a
// non-negative limit stops after limit bytes. sizeHint sizes the buffer.
func readAll(ctx context.Context, file *dirfd.File, sizeHint, limit int64) ([]byte, error) {
	want := sizeHint + 1 // one more byte detects growth without a realloc
	if limit >= 0 && want > limit {
		want = limit
	}
	buf := make([]byte, 0, max(want, 512))
	for limit < 0 || int64(len(buf)) < limit {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(cap(buf), len(buf)+readChunkBytes)
		if limit >= 0 {
			end = min(end, int(limit))
		}
		n, err := file.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return buf, nil
}
