//go:build linux

package textpages_test

import (
	"bufio"
	"crypto/sha256"
	"os"
	"os/user"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/textpages"
)

// table is read-only data of the executable (a constant's bytes): its
// digest is the same after Shrink unmapped its pages.
const table = "the executable's own read-only data, read again from the page cache after Shrink"

// TestShrinkUnmapsTheExecutablesReadOnlySegments: after Shrink the
// executable's code and read-only data are mapped with base pages only
// (VmFlags "nh"), fewer of their pages are resident than before, and what
// they hold reads the same.
func TestShrinkUnmapsTheExecutablesReadOnlySegments(t *testing.T) {
	before := exeSegments(t)
	require.NotEmpty(t, before, "no read-only mapping of the executable found")
	sum := sha256.Sum256([]byte(table))

	textpages.Shrink()

	after := exeSegments(t)
	require.Len(t, after, len(before))
	var rssBefore, rssAfter, written int
	for addr, s := range after {
		if b := before[addr]; b.anonKB > 0 {
			// Relocated by the dynamic linker, then made read-only: left
			// as it is (unmapped, it would read as the file's bytes).
			written++
			assert.Equal(t, b.anonKB, s.anonKB, "%s (%s): its written pages", addr, s.perms)
			continue
		}
		assert.Contains(t, s.flags, "nh", "%s (%s) may still be mapped with huge pages", addr, s.perms)
		rssBefore += before[addr].rssKB
		rssAfter += s.rssKB
	}
	t.Logf("%d written read-only mappings of the executable", written)
	assert.Less(t, rssAfter, rssBefore, "resident kB of the executable's read-only segments")
	t.Logf("the executable's read-only segments: %d kB resident before, %d kB after", rssBefore, rssAfter)
	assert.Equal(t, sum, sha256.Sum256([]byte(table)))
	// With cgo, the dynamic linker relocated part of a read-only mapping
	// before making it so: calls through it still land (a Shrink that
	// unmapped it had the runtime's C setenv and unsetenv jump to address
	// 0, and os/user's lookups likewise).
	require.NoError(t, os.Setenv("HARNESS_TEXTPAGES_TEST", "1"))
	require.NoError(t, os.Unsetenv("HARNESS_TEXTPAGES_TEST"))
	u, err := user.Current()
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getuid()), u.Uid)
}

// segment is what /proc/self/smaps says of one mapping.
type segment struct {
	perms, flags  string
	rssKB, anonKB int
}

// exeSegments returns the executable's private read-only mappings (code
// and read-only data) by address range.
func exeSegments(t *testing.T) map[string]segment {
	t.Helper()
	var exe unix.Stat_t
	require.NoError(t, unix.Stat("/proc/self/exe", &exe))
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // read only
	out := map[string]segment{}
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 6 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			cur = ""
			ino, _ := strconv.ParseUint(fields[4], 10, 64)
			if ino == exe.Ino && (fields[1] == "r-xp" || fields[1] == "r--p") {
				cur = fields[0]
				out[cur] = segment{perms: fields[1]}
			}
		case cur != "" && len(fields) >= 2 && fields[0] == "Rss:":
			s := out[cur]
			s.rssKB, _ = strconv.Atoi(fields[1])
			out[cur] = s
		case cur != "" && len(fields) >= 2 && fields[0] == "Anonymous:":
			s := out[cur]
			s.anonKB, _ = strconv.Atoi(fields[1])
			out[cur] = s
		case cur != "" && len(fields) >= 1 && fields[0] == "VmFlags:":
			s := out[cur]
			s.flags = strings.Join(fields[1:], " ")
			out[cur] = s
		}
	}
	require.NoError(t, sc.Err())
	return out
}
