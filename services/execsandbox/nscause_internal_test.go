//go:build linux

package execsandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamespaceCause: bubblewrap's refusal names the kernel setting that
// stops user namespaces, with its fix (issue 36: Ubuntu's AppArmor
// restriction), and nothing where none does.
func TestNamespaceCause(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"none set", nil, nil},
		{"allowed", map[string]string{"kernel/apparmor_restrict_unprivileged_userns": "0\n", "kernel/unprivileged_userns_clone": "1\n", "user/max_user_namespaces": "63000\n"}, nil},
		{
			"AppArmor",
			map[string]string{"kernel/apparmor_restrict_unprivileged_userns": "1\n", "user/max_user_namespaces": "63000\n"},
			[]string{"; the cause: AppArmor", "apparmor_restrict_unprivileged_userns = 1", "/etc/apparmor.d/bwrap", "userns,", "apparmor_parser -r"},
		},
		{"Debian's switch", map[string]string{"kernel/unprivileged_userns_clone": "0\n"}, []string{"unprivileged_userns_clone = 0", "sysctl -w kernel.unprivileged_userns_clone=1"}},
		{"no namespaces at all", map[string]string{"user/max_user_namespaces": "0\n"}, []string{"max_user_namespaces = 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			proc := t.TempDir()
			for f, v := range c.files {
				require.NoError(t, os.MkdirAll(filepath.Join(proc, filepath.Dir(f)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(proc, f), []byte(v), 0o644))
			}
			got := namespaceCause(proc)
			if c.want == nil {
				assert.Empty(t, got)
				return
			}
			for _, w := range c.want {
				assert.Contains(t, got, w)
			}
		})
	}
}
