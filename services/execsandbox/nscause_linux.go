package execsandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// procSys is where the kernel's settings are read.
const procSys = "/proc/sys"

// namespaceCauses are the kernel settings that stop an ordinary user from
// making the user namespace bubblewrap needs: the file under /proc/sys,
// the value that stops it, and what it means and how to fix it.
var namespaceCauses = []struct{ file, stops, says string }{
	{
		"kernel/apparmor_restrict_unprivileged_userns", "1",
		"AppArmor restricts unprivileged user namespaces here (kernel.apparmor_restrict_unprivileged_userns = 1, the default from Ubuntu 23.10) and no AppArmor profile allows bwrap one. " +
			"Fix (as root): write /etc/apparmor.d/bwrap holding `abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }` " +
			"and load it with `apparmor_parser -r /etc/apparmor.d/bwrap`; or lift the restriction for the whole machine (sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, weaker)",
	},
	{
		"kernel/unprivileged_userns_clone", "0",
		"the kernel lets no ordinary user make a user namespace (kernel.unprivileged_userns_clone = 0). Fix (as root): sysctl -w kernel.unprivileged_userns_clone=1",
	},
	{
		"user/max_user_namespaces", "0",
		"the kernel allows no user namespaces (user.max_user_namespaces = 0). Fix (as root): sysctl -w user.max_user_namespaces=15000",
	},
}

// namespaceCause returns, when a kernel setting under proc (procSys) stops
// an ordinary user from making user namespaces, "; the cause: " and what
// it is and its fix, else "". It is said beside bubblewrap's own message
// ("setting up uid map: Permission denied" and the like), which does not
// name it.
func namespaceCause(proc string) string {
	for _, c := range namespaceCauses {
		b, err := os.ReadFile(filepath.Join(proc, c.file))
		if err == nil && strings.TrimSpace(string(b)) == c.stops {
			return "; the cause: " + c.says
		}
	}
	return ""
}
