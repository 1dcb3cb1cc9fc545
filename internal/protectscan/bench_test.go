//go:build linux

package protectscan_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/protectscan"
	"github.com/dsh-go/harness/internal/subproc"
)

// benchFixture is the benchmark's workspace, kept between runs (creating a
// million files takes minutes): ws/.git/, ws/src/a/.git/ and ws/big/ holding
// 1,000,000 empty files. It is complete when its marker file exists; remove
// the directory to rebuild it.
const (
	benchFixture = "/var/tmp/protectscan-bench-1m"
	benchFiles   = 1_000_000
)

// fixture1M returns the benchmark workspace, creating (or completing) it
// first when its marker is missing. Its directories' mtimes are set an hour
// back, so the racy-timestamp rule does not apply to them.
func fixture1M(b *testing.B) string {
	b.Helper()
	ws := filepath.Join(benchFixture, "ws")
	marker := filepath.Join(benchFixture, "complete")
	if _, err := os.Stat(marker); err != nil {
		start := time.Now()
		require.NoError(b, os.MkdirAll(filepath.Join(ws, ".git"), 0o755))
		require.NoError(b, os.MkdirAll(filepath.Join(ws, "src", "a", ".git"), 0o755))
		big := filepath.Join(ws, "big")
		require.NoError(b, os.MkdirAll(big, 0o755))
		dfd, err := unix.Open(big, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		require.NoError(b, err)
		for i := range benchFiles {
			err := unix.Mknodat(dfd, "f"+padded(i), unix.S_IFREG|0o644, 0)
			if err != nil && !errors.Is(err, unix.EEXIST) {
				_ = unix.Close(dfd)
				require.NoError(b, err)
			}
		}
		require.NoError(b, unix.Close(dfd))
		require.NoError(b, os.WriteFile(marker, nil, 0o644))
		b.Logf("created %d files in %s in %v", benchFiles, big, time.Since(start).Round(time.Second))
	}
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{ws, ws + "/big", ws + "/src", ws + "/src/a"} {
		var st unix.Stat_t
		require.NoError(b, unix.Stat(d, &st))
		if time.Since(time.Unix(st.Mtim.Unix())) < time.Minute {
			require.NoError(b, os.Chtimes(d, old, old))
		}
	}
	return ws
}

// BenchmarkScan1MEntries scans a workspace holding a directory of 1,000,000
// files: "first" with a new Scanner each time (nothing cached), "cached"
// with one warm Scanner, "first-8-concurrent" as eight concurrent calls
// with their own Scanners (an op is all eight). MB/op is the memory
// allocated per op.
func BenchmarkScan1MEntries(b *testing.B) {
	ws := fixture1M(b)
	roots := []protectscan.Root{{Path: ws}}
	scan := func(b *testing.B, s *protectscan.Scanner) {
		entries, err := s.Scan(b.Context(), roots, protectMeta)
		if err != nil || len(entries) != 2 {
			b.Errorf("scan: %d entries, error %v", len(entries), err)
		}
	}
	measure := func(b *testing.B, op func()) {
		b.ReportAllocs()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for b.Loop() {
			op()
		}
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "MB/op")
	}

	b.Run("first", func(b *testing.B) {
		measure(b, func() { scan(b, protectscan.New(protectscan.Options{})) })
	})
	b.Run("cached", func(b *testing.B) {
		s := protectscan.New(protectscan.Options{})
		scan(b, s)
		measure(b, func() { scan(b, s) })
	})
	b.Run("first-8-concurrent", func(b *testing.B) {
		measure(b, func() {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() { scan(b, protectscan.New(protectscan.Options{})) })
			}
			wg.Wait()
		})
	})
}

// manyDirsTree creates beneath base the tree of BenchmarkScanManyDirs: 250
// directories in the root, 3 below each of the first 150, 3 below the first
// of those of the first 100 (1,000 directories in all, the deepest 3 levels
// down), a file in each leaf, and five `.git` directories among them. Its
// directories' mtimes are set an hour back. It returns the `.git` count.
func manyDirsTree(b *testing.B, base string) int {
	b.Helper()
	dirs := 0
	mk := func(p string) {
		require.NoError(b, os.Mkdir(p, 0o755))
		dirs++
	}
	gits := []string{"t000", "t010/c1", "t020/c0/g2", "t140/c2", "t200"}
	for i := range 250 {
		top := filepath.Join(base, "t"+padded(i)[4:])
		mk(top)
		for j := range 3 {
			if i >= 150 {
				break
			}
			c := filepath.Join(top, "c"+padded(j)[6:])
			mk(c)
			for k := range 3 {
				if i >= 100 || j != 0 {
					break
				}
				mk(filepath.Join(c, "g"+padded(k)[6:]))
			}
		}
	}
	require.Equal(b, 1000, dirs)
	require.NoError(b, filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == base {
			return err
		}
		ents, err := os.ReadDir(p)
		if err == nil && len(ents) == 0 {
			err = os.WriteFile(filepath.Join(p, "file"), nil, 0o644)
		}
		return err
	}))
	for _, g := range gits {
		require.NoError(b, os.Mkdir(filepath.Join(base, g, ".git"), 0o755))
	}
	old := time.Now().Add(-time.Hour)
	require.NoError(b, filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	}))
	return len(gits)
}

// BenchmarkScanManyDirs is the cached scan of a root of 1,000 directories
// (manyDirsTree) with a warm Scanner: what every command pays for a temp
// area like a `go test ./...` work directory.
func BenchmarkScanManyDirs(b *testing.B) {
	base, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	want := manyDirsTree(b, base)
	roots := []protectscan.Root{{Path: base}}
	s := protectscan.New(protectscan.Options{})
	if _, err := s.Scan(b.Context(), roots, protectMeta); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		entries, read, err := s.ScanCounted(b.Context(), roots, protectMeta)
		if err != nil || len(entries) != want || read != 0 {
			b.Fatalf("scan: %d entries, %d read, error %v", len(entries), read, err)
		}
	}
}

// BenchmarkPlaceholderChurn: what one command's placeholders cost the
// scanners that keep results of its workspace: the runner reserves 36
// missing names at the root (a directory each, as the host-run names are)
// and releases them, and three scanners (the protected paths', the
// sockets', another root set's) are asked again after each, every one
// answered from its kept result. Each op is one command: the drains judge
// its placeholders' events (made under a temporary name, marked, given
// their mode, renamed, removed), reading what is at each path once a
// drain, however many scanners and events hear of it.
func BenchmarkPlaceholderChurn(b *testing.B) {
	if ok, why := protectscan.Notifications(); !ok {
		b.Skip(why)
	}
	base, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	ws := filepath.Join(base, "ws")
	for _, d := range []string{"ws/src/a", "ws/.git", "other"} {
		require.NoError(b, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	old := time.Now().Add(-time.Hour) // past the racy-timestamp rule
	for _, d := range []string{"ws/src/a", "ws/src", "ws/.git", "ws", "other"} {
		require.NoError(b, os.Chtimes(filepath.Join(base, d), old, old))
	}
	var names []string
	for i := range 36 {
		names = append(names, filepath.Join(ws, fmt.Sprintf(".name%02d", i)))
	}
	match := func(rel string, _ bool) bool {
		name := filepath.Base(rel)
		return name == ".git" || strings.HasPrefix(name, ".name")
	}
	type asked struct {
		s     *protectscan.Scanner
		roots []protectscan.Root
	}
	scanners := []asked{
		{protectscan.New(protectscan.Options{}), []protectscan.Root{{Path: ws}}},
		{protectscan.New(protectscan.Options{Sockets: true}), []protectscan.Root{{Path: ws}}},
		{protectscan.New(protectscan.Options{}), []protectscan.Root{{Path: ws}, {Path: filepath.Join(base, "other")}}},
	}
	ask := func() {
		for _, a := range scanners {
			_, reused, err := a.s.ScanReused(b.Context(), a.roots, match)
			require.NoError(b, err)
			require.True(b, reused, "placeholders do not undo a kept result")
		}
	}
	for range 2 {
		for _, a := range scanners {
			_, err := a.s.Scan(b.Context(), a.roots, match)
			require.NoError(b, err)
		}
	}
	ask()
	for b.Loop() {
		held := make([]*subproc.Reservation, 0, len(names))
		for _, p := range names {
			h, err := subproc.Reserve(p, true)
			require.NoError(b, err)
			held = append(held, h)
		}
		ask()
		subproc.ReleaseAll(held...)
		ask()
	}
}
