//go:build linux

package landlock_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/landlock"
)

// onThrowawayThread runs fn on a goroutine locked to its thread that exits
// without unlocking, so the runtime terminates the thread afterwards: fn may
// change per-thread state (seccomp, credentials) without touching any other
// goroutine. It returns when fn has returned. Like the Executor's workers, it
// never uses the main thread, which the runtime parks instead of terminating.
func onThrowawayThread(fn func()) {
	done := make(chan struct{})
	var run func()
	run = func() {
		runtime.LockOSThread() // never unlocked, except on the main thread
		if unix.Gettid() == unix.Getpid() {
			go run() // cannot run on this thread while it is locked here
			<-done
			runtime.UnlockOSThread()
			return
		}
		defer close(done)
		fn()
	}
	go run()
	<-done
}

// newExecutor returns an Executor closed at the end of the test.
func newExecutor(t testing.TB, cfg landlock.Config) *landlock.Executor {
	t.Helper()
	ex, err := landlock.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ex.Close()) })
	return ex
}

// taskAlive reports whether the thread tid of this process still exists.
func taskAlive(tid int) bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
	return err == nil
}

// taskCount returns the number of threads of this process.
func taskCount(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	return len(entries)
}

// dirs makes the named directories beneath a fresh temp directory and
// returns their canonical paths in order.
func dirs(t testing.TB, names ...string) []string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(base, n)
		require.NoError(t, os.MkdirAll(out[i], 0o755))
	}
	return out
}

// create makes the file name in dir with text through the calling thread and
// returns the error of the first syscall that failed.
func create(dir, name, text string) error {
	fd, err := unix.Open(filepath.Join(dir, name), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte(text))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// readText returns the file's content, or "<missing>".
func readText(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return "<missing>"
	}
	require.NoError(t, err)
	return string(b)
}
