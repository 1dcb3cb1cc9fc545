package toolexec

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUsernsNote(t *testing.T) {
	for _, tc := range []struct {
		name, stderr, line string
	}{
		{"unshare", "unshare: unshare failed: No space left on device\n", "unshare: unshare failed: No space left on device"},
		{"bubblewrap", "bwrap: Creating new namespace failed: Operation not permitted", "bwrap: Creating new namespace failed: Operation not permitted"},
		{
			"chromium",
			"[1204/031500.1:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! Update your kernel or see https://chromium.googlesource.com/\n",
			"[1204/031500.1:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! Update your kernel or see https://chromium.googlesource.com/",
		},
		{
			"chromium's namespace",
			"Failed to move to new namespace: PID namespaces supported, Network namespace supported, but failed: errno = No space left on device",
			"Failed to move to new namespace: PID namespaces supported, Network namespace supported, but failed: errno = No space left on device",
		},
		{"podman", "Error: cannot clone: user namespace creation failed: No space left on device", "Error: cannot clone: user namespace creation failed: No space left on device"},
		{"a full disk", "cp: error writing 'out': No space left on device", ""},
		{"a plain EPERM", "chmod: changing permissions of 'x': Operation not permitted", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			note, ok := usernsNote(tc.stderr)
			assert.Equal(t, tc.line != "", ok, note)
			if ok {
				assert.Contains(t, note, "[sandbox: commands cannot make user namespaces]")
				assert.Contains(t, note, "reports \""+tc.line+"\"")
				assert.Contains(t, note, "--no-sandbox")
			}
		})
	}
}
