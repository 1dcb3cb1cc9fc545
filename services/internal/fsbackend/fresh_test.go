//go:build linux

package fsbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/textfile"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// fingerprint is what a whole-file read of p records: its size and the hash
// of its text as ReadText returns it.
func fingerprint(t *testing.T, f *fslocal.FileSystem, p string) fs.Fingerprint {
	t.Helper()
	tg := resolve(t, f, p)
	text, err := f.ReadText(context.Background(), tg)
	require.NoError(t, err)
	info, err := f.Stat(context.Background(), tg)
	require.NoError(t, err)
	h := textfile.NewTextHash()
	h.Write(text)
	return fs.Fingerprint{Size: info.Size, Hash: fs.ContentHash(h.Sum())}
}

// TestGuardByContent covers spec difference 14 in the backend: a guarded
// write or edit whose version no longer matches still applies when the file
// has the guard's size and content hash (hashed under the target's lock),
// and is FS_STALE_VERSION otherwise, or when the guard has no hash. Each
// case checks the disk.
func TestGuardByContent(t *testing.T) {
	utf16 := "\xff\xfeh\x00i\x00\n\x00" // "\ufeffhi\n" in UTF-16LE
	touch := func(t *testing.T, p string) {
		later := time.Now().Add(time.Hour)
		require.NoError(t, os.Chtimes(p, later, later))
	}
	replaceSame := func(t *testing.T, p string) {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p+".tmp", raw, 0o644))
		require.NoError(t, os.Rename(p+".tmp", p))
	}
	rewrite := func(content string) func(t *testing.T, p string) {
		return func(t *testing.T, p string) { require.NoError(t, os.WriteFile(p, []byte(content), 0o644)) }
	}
	tests := []struct {
		name    string
		initial string
		hashed  bool // the guard carries the read's fingerprint
		change  func(t *testing.T, p string)
		edit    bool
		want    string // the disk after success; "" for FS_STALE_VERSION, disk as changed
	}{
		{name: "touch, edit with a hash: applies", initial: "hi\n", hashed: true, change: touch, edit: true, want: "HI\n"},
		{name: "touch, write with a hash: applies", initial: "hi\n", hashed: true, change: touch, want: "new\n"},
		{name: "same bytes, new inode, edit with a hash: applies", initial: "hi\n", hashed: true, change: replaceSame, edit: true, want: "HI\n"},
		{name: "same bytes, new inode, write with a hash: applies", initial: "hi\n", hashed: true, change: replaceSame, want: "new\n"},
		{name: "UTF-16 touched, edit with a hash: applies in UTF-16", initial: utf16, hashed: true, change: touch, edit: true, want: "\xff\xfeH\x00I\x00\n\x00"},
		{name: "UTF-16 touched, write with a hash: applies in UTF-16", initial: utf16, hashed: true, change: touch, want: "\xff\xfen\x00e\x00w\x00\n\x00"},
		{name: "touch, edit without a hash: stale", initial: "hi\n", change: touch, edit: true},
		{name: "touch, write without a hash: stale", initial: "hi\n", change: touch},
		{name: "same size, other bytes, edit: stale", initial: "hi\n", hashed: true, change: rewrite("ho\n"), edit: true},
		{name: "same size, other bytes, write: stale", initial: "hi\n", hashed: true, change: rewrite("ho\n")},
		{name: "same size, now not text, edit: stale", initial: "hi\n", hashed: true, change: rewrite("h\xff\n"), edit: true},
		{name: "same size, now not text, write: stale", initial: "hi\n", hashed: true, change: rewrite("h\xff\n")},
		{name: "other size, write: stale without hashing", initial: "hi\n", hashed: true, change: rewrite("hi\n\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			p := filepath.Join(dir, "a.txt")
			require.NoError(t, os.WriteFile(p, []byte(tc.initial), 0o644))
			tg := resolve(t, f, p)
			v := versionOf(t, f, tg)
			var fp fs.Fingerprint
			if tc.hashed {
				fp = fingerprint(t, f, p)
			}
			tc.change(t, p)
			require.NotEqual(t, v, versionOf(t, f, tg))
			changed := readFile(t, p)
			ctx := context.Background()
			var err error
			if tc.edit {
				_, err = f.EditText(ctx, tg, fs.EditRequest{OldString: "hi", NewString: "HI", Version: v, Content: fp})
			} else {
				_, err = f.WriteText(ctx, tg, "new\n", fs.WriteOptions{Intent: fs.ReplaceSeen(fs.Observation{Version: v, Content: fp})})
			}
			if tc.want == "" {
				assert.EqualValues(t, fs.CodeStaleVersion, fs.CodeOf(err), "%v", err)
				assert.Equal(t, changed, readFile(t, p), "nothing written")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, readFile(t, p))
		})
	}
}

// BenchmarkWriteTextTouchedLarge is a guarded 1 KiB write over a 16 MiB
// file whose version changed by a touch since the read: the guard hashes
// the file under the target's lock before publishing (spec difference 14).
// Compare BenchmarkWriteTextOverLarge, the same write unguarded.
func BenchmarkWriteTextTouchedLarge(b *testing.B) {
	ctx := context.Background()
	dir := benchDir(b)
	f, _ := fslocal.New(fslocal.Config{Cwd: dir}, nil)
	tg, _ := f.Resolve(ctx, "f", fs.ResolveOptions{})
	p := filepath.Join(dir, "f")
	large := strings.Repeat(strings.ReplaceAll(kib, "\n", "\r\n")[:1024], 16<<10)
	h := textfile.NewTextHash()
	h.Write(large)
	seen := fs.Fingerprint{Size: int64(len(large)), Hash: fs.ContentHash(h.Sum())}
	b.SetBytes(int64(len(large)))
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(p, []byte(large), 0o644); err != nil {
			b.Fatal(err)
		}
		info, err := f.Stat(ctx, tg)
		if err != nil {
			b.Fatal(err)
		}
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(p, later, later); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		intent := fs.ReplaceSeen(fs.Observation{Version: info.Version, Content: seen})
		if _, err := f.WriteText(ctx, tg, kib, fs.WriteOptions{Intent: intent}); err != nil {
			b.Fatal(err)
		}
	}
}
