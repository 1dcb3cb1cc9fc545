package helperbin

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReleaseDropsTheResidentPages: after Release no whole page of the
// embedded helper is mapped in the process (the present bits of
// /proc/self/pagemap), and the image still reads as the stamped helper,
// from the file again.
func TestReleaseDropsTheResidentPages(t *testing.T) {
	if !Present() {
		t.Skip("this test binary embeds no command helper: make test and make check compile with it (scripts/helper-flags.sh)")
	}
	img := Program()
	require.NotNil(t, img, "the embedded helper is not the stamped one")
	page := os.Getpagesize()
	start := int(uintptr(unsafe.Pointer(unsafe.SliceData(img))))
	first, last := (start+page-1)/page, (start+len(img))/page // whole pages: [first, last)
	require.Greater(t, last, first)
	assert.Equal(t, last-first, resident(t, first, last), "Program's check read every page")

	Release()
	assert.Zero(t, resident(t, first, last), "pages still mapped after Release")

	got := sha256.Sum256(Program())
	assert.Equal(t, sum, hex.EncodeToString(got[:]), "the image changed")
	assert.Equal(t, last-first, resident(t, first, last), "read again from the file")
}

// resident counts the pages in [first, last) whose pagemap entry says
// present.
func resident(t *testing.T, first, last int) int {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	buf := make([]byte, 8*(last-first))
	_, err = f.ReadAt(buf, int64(first)*8)
	require.NoError(t, err)
	n := 0
	for i := 0; i < len(buf); i += 8 {
		if binary.LittleEndian.Uint64(buf[i:])>>63 == 1 {
			n++
		}
	}
	return n
}
