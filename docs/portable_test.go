package docs_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aboveTheBackends are the packages architecture.md's platform seam says
// build on any system: the policy, the guard, the tool layer, the record
// and the composition root (issue 37).
var aboveTheBackends = []string{
	"./services/sandbox", "./services/sandboxpolicy", "./services/guard", "./services/tool",
	"./services/toolfs", "./services/toolexec", "./services/audit", "./services/journal",
	"./services/undo",
}

// linuxOnly are the module paths whose packages do their work only on Linux
// (cgroups, seccomp, eBPF, systemd's D-Bus, libcap's psx): none may be
// among the dependencies of a package above the backends on another system.
var linuxOnly = []string{
	"github.com/containerd/cgroups",
	"github.com/elastic/go-seccomp-bpf",
	"github.com/cilium/ebpf",
	"github.com/coreos/go-systemd",
	"github.com/godbus/dbus",
	"kernel.org/pub/linux/libs/security/libcap",
}

// TestAboveTheBackendsIsPortable checks architecture.md's claim that
// nothing above the backends imports a Linux-only module for darwin
// (`GOOS=darwin go list -deps`; make darwin builds and vets it). For Linux
// the same packages do reach one (the runner's seccomp filter), so the check
// can fail.
func TestAboveTheBackendsIsPortable(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of the dependencies for two systems: make test runs it")
	}
	assert.NotEmpty(t, linuxOnlyDeps(t, "linux"), "for Linux the packages above the backends reach no Linux-only module: the list checks nothing")
	for _, dep := range linuxOnlyDeps(t, "darwin") {
		t.Errorf("for darwin, the packages above the backends depend on %s (Linux-only)", dep)
	}
}

// linuxOnlyDeps lists the packages of linuxOnly's modules among the
// dependencies of aboveTheBackends for goos (`go list -deps`, amd64, no cgo).
func linuxOnlyDeps(t *testing.T, goos string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps"}, aboveTheBackends...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "GOOS=%s go list -deps: %s", goos, stderr.Bytes())
	deps := strings.Fields(string(out))
	require.GreaterOrEqual(t, len(deps), len(aboveTheBackends), "GOOS=%s go list -deps listed fewer packages than it was given", goos)
	var found []string
	for _, dep := range deps {
		for _, m := range linuxOnly {
			if dep == m || strings.HasPrefix(dep, m+"/") {
				found = append(found, dep)
			}
		}
	}
	return found
}
