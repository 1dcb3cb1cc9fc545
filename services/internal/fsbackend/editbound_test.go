//go:build linux

package fsbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/internal/fixture"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
)

// TestEditTextResultBound (issue 14, item 10): an edit sizes its result
// before building it and refuses one past MaxBytes with FS_TOO_LARGE,
// leaving the file's bytes and mode as they were, without allocating the
// result; the limit is inclusive.
func TestEditTextResultBound(t *testing.T) {
	const limit = 16 << 20 // the write tool's default limit
	million := strings.Repeat("a", 1_000_000)
	cases := []struct {
		name       string
		content    string
		req        fs.EditRequest
		want       string // the file after a successful edit; "" for a refusal
		allocBelow uint64 // bytes the call may allocate, when set
	}{
		{
			name: "1,000,000 a, replace_all a with 100 b: 100 MB refused before it is built", content: million,
			req:        fs.EditRequest{OldString: "a", NewString: strings.Repeat("b", 100), ReplaceAll: true, MaxBytes: limit},
			allocBelow: 64 << 20,
		},
		{
			name: "1,000,000 a, replace_all a with 4 KB: 4 GB never allocated", content: million,
			req:        fs.EditRequest{OldString: "a", NewString: strings.Repeat("b", 4096), ReplaceAll: true, MaxBytes: limit},
			allocBelow: 64 << 20,
		},
		{
			name: "replace_all growing to exactly the limit lands", content: "aaaa",
			req: fs.EditRequest{OldString: "a", NewString: "bb", ReplaceAll: true, MaxBytes: 8}, want: "bbbbbbbb",
		},
		{
			name: "replace_all one byte past the limit is refused", content: "aaaa",
			req: fs.EditRequest{OldString: "a", NewString: "bb", ReplaceAll: true, MaxBytes: 7},
		},
		{
			name: "a single replacement past the limit is refused", content: "abc",
			req: fs.EditRequest{OldString: "b", NewString: strings.Repeat("x", 20), MaxBytes: 10},
		},
		{
			name: "CRLF endings restored past the limit are refused", content: "a\r\na\r\n",
			req: fs.EditRequest{OldString: "a", NewString: "a\nb", ReplaceAll: true, MaxBytes: 11},
		},
		{
			name: "CRLF endings restored within the limit land", content: "a\r\na\r\n",
			req: fs.EditRequest{OldString: "a", NewString: "a\nb", ReplaceAll: true, MaxBytes: 12}, want: "a\r\nb\r\na\r\nb\r\n",
		},
		{
			name: "UTF-16: the limit counts the encoded bytes", content: "\xff\xfea\x00a\x00a\x00a\x00",
			req: fs.EditRequest{OldString: "a", NewString: "bb", ReplaceAll: true, MaxBytes: 17},
		},
		{
			name: "UTF-16: growing to exactly the limit lands", content: "\xff\xfea\x00a\x00a\x00a\x00",
			req:  fs.EditRequest{OldString: "a", NewString: "bb", ReplaceAll: true, MaxBytes: 18},
			want: "\xff\xfe" + strings.Repeat("b\x00", 8),
		},
		{
			name: "UTF-16: a text smaller than its UTF-8 form is not refused by the estimate", content: "\xff\xfea\x00a\x00a\x00",
			req:  fs.EditRequest{OldString: "a", NewString: "中", ReplaceAll: true, MaxBytes: 8},
			want: "\xff\xfe" + strings.Repeat("\x2d\x4e", 3),
		},
		{
			name: "a shrinking replace_all of a file at the limit lands", content: "abab",
			req: fs.EditRequest{OldString: "b", ReplaceAll: true, MaxBytes: 4}, want: "aa",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newFS(t, fslocal.Config{})
			p := filepath.Join(dir, "a.txt")
			require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o640))
			tg := resolve(t, f, "a.txt")

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := f.EditText(context.Background(), tg, tc.req)
			runtime.ReadMemStats(&after)

			info, statErr := os.Stat(p)
			require.NoError(t, statErr)
			assert.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "mode kept")
			if tc.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, readFile(t, p))
				return
			}
			require.ErrorIs(t, err, fs.ErrTooLarge)
			assert.Equal(t, `cannot edit "`+p+`": the edited content would exceed the `+strconv.FormatInt(tc.req.MaxBytes, 10)+`-byte limit`, err.Error())
			assert.Equal(t, tc.content, readFile(t, p), "the file is unchanged on disk")
			assert.Empty(t, fixture.Residue(t, dir), "nothing staged")
			if tc.allocBelow > 0 {
				assert.Less(t, after.TotalAlloc-before.TotalAlloc, tc.allocBelow, "bytes allocated by the refused edit")
			}
		})
	}
}
