package audit_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/audit"
)

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	lostLine  = regexp.MustCompile(`(?m)^harness: audit log .*: records lost: `)
	againLine = regexp.MustCompile(`(?m)^harness: audit log .*: writing again; (\d+) records were lost$`)
)

// episodes checks that each episode on stderr is one loss line and one
// recovery line, and returns the number of episodes and the records the
// recovery lines say were lost.
func episodes(t *testing.T, stderr string) (n int, lost int64) {
	t.Helper()
	starts := lostLine.FindAllStringIndex(stderr, -1)
	ends := againLine.FindAllStringSubmatch(stderr, -1)
	require.Len(t, ends, len(starts), "each loss reported is followed by one recovery:\n%s", stderr)
	for _, m := range ends {
		v, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		lost += v
	}
	return len(starts), lost
}

// A writer blocked on a pipe nobody reads stands for a disk that stalls:
// the queue fills, Append keeps returning, and what it could not queue is
// counted by the records written once the pipe drains.
func TestLogFullQueueLosesCountsAndReports(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.fifo")
	require.NoError(t, unix.Mkfifo(path, 0o600))
	reader, err := os.OpenFile(path, os.O_RDWR, 0) // a reader that does not read yet
	require.NoError(t, err)
	defer func() { _ = reader.Close() }()

	var stderr syncBuffer
	core, logs := observer.New(zapcore.InfoLevel)
	l, err := audit.OpenLog(audit.LogOptions{Path: path, Queue: 4, Stderr: &stderr, Log: zap.New(core)})
	require.NoError(t, err)
	const total = 2000 // ~460 KB: far more than the pipe holds
	for i := range total {
		l.Append(record("read", i))
	}
	require.NotEmpty(t, logs.FilterMessage("audit log: records lost").All(), "the loss is reported while the writer is stuck")

	var got bytes.Buffer
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(&got, reader); copied <- err }()
	require.NoError(t, l.Close())
	// Everything is in the pipe now: the copy ends when it has read it.
	require.NoError(t, reader.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	require.ErrorIs(t, <-copied, os.ErrDeadlineExceeded)

	var written, carried int64
	for _, r := range decode(t, splitLines(t, got.Bytes())) {
		written++
		carried += r.Lost
	}
	assert.Equal(t, int64(total), written+carried, "every record is written or counted")
	assert.Positive(t, carried)
	w, lost := l.Counts()
	assert.Equal(t, written, w, "Counts: written")
	assert.Equal(t, carried, lost, "Counts: lost")
	n, reported := episodes(t, stderr.String())
	assert.Positive(t, n)
	assert.Equal(t, carried, reported)
	for _, e := range logs.FilterMessage("audit log: records lost").All() {
		assert.Equal(t, zapcore.ErrorLevel, e.Level)
	}
	assert.Len(t, logs.FilterMessage("audit log: records lost").All(), n, "once per episode")
}

// /dev/full fails every write with ENOSPC, as a full disk does. The log
// reopens its path when the name moves to another file, so pointing the
// name at a regular file ends the episode.
func TestLogFailingDiskLosesCountsAndRecovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	require.NoError(t, os.Symlink("/dev/full", path))

	var stderr syncBuffer
	core, logs := observer.New(zapcore.InfoLevel)
	l, err := audit.OpenLog(audit.LogOptions{Path: path, Stderr: &stderr, Log: zap.New(core)})
	require.NoError(t, err)
	for i := range 10 {
		l.Append(record("write", i))
	}
	require.Eventually(t, func() bool { return lostLine.MatchString(stderr.String()) }, waitFor, tick)

	// The disk has room again.
	require.NoError(t, os.Remove(path))
	l.Append(record("write", 10))
	require.NoError(t, l.Close())

	// The writer may have met the new file before it took the last of the
	// first ten: what it wrote and what it counted make eleven.
	recs := decode(t, lines(t, path))
	require.NotEmpty(t, recs)
	assert.Equal(t, "10", recs[len(recs)-1].Call)
	assert.Positive(t, recs[0].Lost, "the first record written says how many were lost")
	var carried int64
	for _, r := range recs {
		carried += r.Lost
	}
	assert.Equal(t, int64(11), int64(len(recs))+carried)
	w, lost := l.Counts()
	assert.Equal(t, []int64{int64(len(recs)), carried}, []int64{w, lost}, "Counts")
	n, reported := episodes(t, stderr.String())
	assert.Equal(t, 1, n)
	assert.Equal(t, carried, reported)
	errs := logs.FilterMessage("audit log: records lost").All()
	require.Len(t, errs, 1)
	assert.Equal(t, zapcore.ErrorLevel, errs[0].Level)
	assert.Contains(t, errs[0].ContextMap()["error"], "no space left on device")
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode())
}

// A real filesystem filling up (root only: it mounts a 64 KiB tmpfs).
func TestLogFullTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir, err := os.MkdirTemp("/var/tmp", "audit-tmpfs-")
	require.NoError(t, err)
	defer func() { _ = os.RemoveAll(dir) }()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	defer func() { _ = exec.Command("umount", dir).Run() }()
	filler := filepath.Join(dir, "filler")
	fill, err := os.Create(filler)
	require.NoError(t, err)
	_, err = io.Copy(fill, io.LimitReader(zeros{}, 1<<20))
	require.ErrorIs(t, err, unix.ENOSPC)
	require.NoError(t, fill.Close())

	path := filepath.Join(dir, "audit.jsonl")
	var stderr syncBuffer
	l, err := audit.OpenLog(audit.LogOptions{Path: path, Stderr: &stderr})
	require.NoError(t, err)
	for i := range 50 {
		l.Append(record("edit", i))
	}
	require.Eventually(t, func() bool { return lostLine.MatchString(stderr.String()) }, waitFor, tick)
	require.NoError(t, os.Remove(filler))
	l.Append(record("edit", 50))
	require.NoError(t, l.Close())

	var written, carried int64
	for _, r := range decode(t, lines(t, path)) {
		written++
		carried += r.Lost
	}
	assert.Equal(t, int64(51), written+carried)
	assert.Positive(t, carried)
	n, reported := episodes(t, stderr.String())
	assert.Equal(t, 1, n)
	assert.Equal(t, carried, reported)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestLogCloseReturnsTheLastBatchError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	require.NoError(t, os.Symlink("/dev/full", path))
	var stderr syncBuffer
	l, err := audit.OpenLog(audit.LogOptions{Path: path, Stderr: &stderr})
	require.NoError(t, err)
	l.Append(record("write", 0))
	err = l.Close()
	require.ErrorIs(t, err, unix.ENOSPC)
	assert.Regexp(t, lostLine, stderr.String())
	assert.NotRegexp(t, againLine, stderr.String())
}
