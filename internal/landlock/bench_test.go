package landlock_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/landlock"
)

// BenchmarkRun compares a function called directly with the same function
// run through Executor.Run on a thread restricted to one root: a no-op (the
// cost of the hand-off between goroutines and threads) and an openat for
// writing of an existing file beneath the root plus close (the hand-off plus
// Landlock's own check of the open).
//
//	go test -run '^$' -bench BenchmarkRun -count 5 ./internal/landlock/
func BenchmarkRun(b *testing.B) {
	root := dirs(b, "root")[0]
	require.NoError(b, os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644))
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(b, err)
	b.Cleanup(func() { _ = unix.Close(rootFD) })
	ex := newExecutor(b, landlock.Config{})
	roots := []string{root}
	ctx := context.Background()

	fns := []struct {
		name string
		fn   func() error
	}{
		{"noop", func() error { return nil }},
		{"openat-close", func() error {
			fd, err := unix.Openat(rootFD, "f", unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			return unix.Close(fd)
		}},
	}
	for _, f := range fns {
		b.Run(f.name+"/direct", func(b *testing.B) {
			for b.Loop() {
				if err := f.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.name+"/run", func(b *testing.B) {
			for b.Loop() {
				if err := ex.Run(ctx, roots, f.fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
