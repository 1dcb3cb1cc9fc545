package dirfd

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// File is a descriptor opened for reading by OpenRead: Read and ReadAt
// call read(2) and pread(2) directly. Unlike an *os.File it costs no
// system calls beyond the open and the close: os.NewFile checks the
// descriptor's flags and registers a non-blocking one with the runtime's
// poller, which a regular file refuses, two calls per open that count when
// every tool call opens a file or two. Reads do not block on a regular
// file; on a FIFO or device opened non-blocking they return EAGAIN, and
// callers read only what IsRegular accepts. Errors are *os.PathError; a read
// at the end of the file returns io.EOF.
type File struct {
	fd   int
	name string
}

// newFile wraps the open descriptor fd, displayed as name.
func newFile(fd int, name string) *File { return &File{fd: fd, name: name} }

// Fd returns the descriptor (-1 once closed).
func (f *File) Fd() int { return f.fd }

// Name returns the path the file was opened by, for messages.
func (f *File) Name() string { return f.name }

// Read reads up to len(b) bytes at the file's offset (io.Reader).
func (f *File) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(f.fd, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// ReadAt reads len(b) bytes at offset off (io.ReaderAt): fewer only at the
// end of the file, with io.EOF.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Pread(f.fd, b[done:], off+int64(done))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return done, &os.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return done, io.EOF
		}
		done += n
	}
	return done, nil
}

// Close closes the descriptor; a second Close returns os.ErrClosed.
func (f *File) Close() error {
	if f.fd < 0 {
		return os.ErrClosed
	}
	fd := f.fd
	f.fd = -1
	if err := unix.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}
