//go:build linux

package subproc_test

import (
	"bytes"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/subproc"
)

// TestSealedIsTheOpenedFile (issue 22): the sealed copy holds the file as
// it was opened, whatever later replaces it by rename or rewrites it in
// place, and nothing can write, grow or shrink the copy.
func TestSealedIsTheOpenedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prog")
	original := []byte("\x7fELF original program bytes")
	require.NoError(t, os.WriteFile(path, original, 0o755))
	p, err := subproc.OpenProgram(path)
	require.NoError(t, err)

	// Replaced by rename (as the file tools publish) before the copy...
	require.NoError(t, os.WriteFile(path+".new", []byte("replacement"), 0o755))
	require.NoError(t, os.Rename(path+".new", path))
	sealed, err := p.Sealed()
	require.NoError(t, err)
	// ...and rewritten in place after it.
	require.NoError(t, os.WriteFile(path, []byte("rewritten in place"), 0o755))

	f := subproc.ProgramFile(sealed)
	got, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	require.NoError(t, err)
	assert.Equal(t, original, got)
	assertSealed(t, f)
	if w, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_WRONLY, 0); err == nil {
		_, err = w.Write([]byte("x"))
		assert.Error(t, err, "a sealed copy takes a write")
		_ = w.Close()
	}
	assert.Error(t, unix.Ftruncate(int(f.Fd()), 0))

	_, err = subproc.OpenProgram(filepath.Join(dir, "missing"))
	assert.Error(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), nil, 0o644))
	_, err = subproc.OpenProgram(filepath.Join(dir, "data"))
	assert.ErrorContains(t, err, "not an executable regular file")
}

// TestSealedCopiesTheWholeBinary: the copy of a binary of tens of megabytes
// (this test's own) is byte for byte the file, from its first byte whatever
// the opened file's offset (the copy is made in the kernel, in chunks).
func TestSealedCopiesTheWholeBinary(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	want, err := os.ReadFile(self)
	require.NoError(t, err)
	require.Greater(t, len(want), 1<<20, "the test binary is expected to be megabytes")
	p, err := subproc.OpenProgram(self)
	require.NoError(t, err)
	// Move the opened file's offset: the copy must not start there.
	_, err = subproc.ProgramFile(p).Read(make([]byte, 4097))
	require.NoError(t, err)
	sealed, err := p.Sealed()
	require.NoError(t, err)
	got, err := io.ReadAll(io.NewSectionReader(subproc.ProgramFile(sealed), 0, int64(len(want))+1))
	require.NoError(t, err)
	require.Len(t, got, len(want))
	assert.True(t, bytes.Equal(want, got), "the sealed copy differs from the binary")
}

// TestSealedProgramRuns: an executable image given as bytes (internal/
// helperbin's embedded helper) is sealed like Sealed's copy, holds exactly
// the bytes, and runs by descriptor.
func TestSealedProgramRuns(t *testing.T) {
	image := []byte("#!/bin/sh\necho sealed \"$@\"\n")
	p, err := subproc.SealedProgram("the test script", image)
	require.NoError(t, err)
	f := subproc.ProgramFile(p)
	got, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	require.NoError(t, err)
	assert.Equal(t, image, got)
	assertSealed(t, f)
	assert.Error(t, unix.Ftruncate(int(f.Fd()), 0))
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(f.Fd()), &st))
	assert.Equal(t, uint32(0o555), st.Mode&0o7777)
	assert.Equal(t, "the test script", p.Path())
	// Passed as descriptor 3, open across the exec (a script's
	// interpreter opens it by that path again).
	cmd := osexec.Command("/proc/self/fd/3", "runs")
	cmd.ExtraFiles = []*os.File{f}
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "sealed runs\n", string(out))
}

// assertSealed checks the seals of a sealed copy: no write, grow, shrink or
// further seal, and, where the kernel has F_SEAL_EXEC (Linux 6.3), no mode
// change: a command of --exec local cannot chmod it through /proc/PID/exe.
func assertSealed(t *testing.T, f *os.File) {
	t.Helper()
	want := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	probe, err := unix.MemfdCreate("probe", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	require.NoError(t, err)
	defer unix.Close(probe) //nolint:errcheck // probe
	_, err = unix.FcntlInt(uintptr(probe), unix.F_ADD_SEALS, unix.F_SEAL_EXEC)
	execSeal := err == nil
	if execSeal {
		want |= unix.F_SEAL_EXEC
	}
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	require.NoError(t, err)
	// (The kernel adds F_SEAL_FUTURE_WRITE to an executable file's
	// F_SEAL_EXEC.)
	assert.Equal(t, want, seals&want, "seals %#x", seals)
	if execSeal {
		assert.ErrorIs(t, unix.Fchmod(int(f.Fd()), 0), unix.EPERM, "the mode of a sealed copy changed")
		var st unix.Stat_t
		require.NoError(t, unix.Fstat(int(f.Fd()), &st))
		assert.NotZero(t, st.Mode&0o111, "the sealed copy is no longer executable")
	}
}
