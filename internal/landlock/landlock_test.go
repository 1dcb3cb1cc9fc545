//go:build linux

package landlock_test

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/landlock"
)

func TestABI(t *testing.T) {
	abi, err := landlock.ABI()
	require.NoError(t, err, "this suite needs Landlock ABI 2+")
	assert.GreaterOrEqual(t, abi, 2)
	t.Logf("Landlock ABI %d", abi)
}

// auditArch is the seccomp_data.arch value of this build's architecture.
func auditArch(t *testing.T) uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	default:
		t.Skipf("no seccomp arch constant for %s in this test", runtime.GOARCH)
		return 0
	}
}

// blockLandlock installs, on the calling thread only, a seccomp filter that
// answers landlock_create_ruleset with errno, as a container runtime's filter
// does for syscalls it does not allow.
func blockLandlock(arch uint32, errno unix.Errno) error {
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: arch, Jt: 0, Jf: 3},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_LANDLOCK_CREATE_RULESET, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(errno)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
}

// TestProbeUnderSeccomp probes on a thread whose seccomp filter blocks
// landlock_create_ruleset: the result is unavailable, Blocked, with the errno.
func TestProbeUnderSeccomp(t *testing.T) {
	arch := auditArch(t)
	for _, errno := range []unix.Errno{unix.ENOSYS, unix.EPERM} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			var (
				abi       int
				err, ferr error
			)
			onThrowawayThread(func() {
				if ferr = blockLandlock(arch, errno); ferr == nil {
					abi, err = landlock.ProbeABI()
				}
			})
			require.NoError(t, ferr)
			assert.Zero(t, abi)
			var ue *landlock.UnavailableError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, landlock.Blocked, ue.Reason)
			assert.True(t, ue.Seccomp)
			require.ErrorIs(t, err, errno)
			assert.Contains(t, err.Error(), "seccomp")
			assert.Contains(t, err.Error(), unix.ErrnoName(errno))
		})
	}
	// The filter stayed on its thread, which is gone: the process still has
	// Landlock.
	_, err := landlock.ProbeABI()
	require.NoError(t, err)
}

func TestUnavailableReasons(t *testing.T) {
	tests := []struct {
		name    string
		errno   unix.Errno
		seccomp bool
		want    landlock.Reason
		says    string
	}{
		{"ENOSYS without a filter is the kernel", unix.ENOSYS, false, landlock.NoKernelSupport, "CONFIG_SECURITY_LANDLOCK"},
		{"ENOSYS under a filter is the filter", unix.ENOSYS, true, landlock.Blocked, "seccomp"},
		{"EOPNOTSUPP is the boot configuration", unix.EOPNOTSUPP, false, landlock.NotEnabled, "lsm="},
		{"EOPNOTSUPP under a filter is still the boot configuration", unix.EOPNOTSUPP, true, landlock.NotEnabled, "lsm="},
		{"EPERM is never Landlock's", unix.EPERM, false, landlock.Blocked, "never returns"},
		{"EPERM under a filter is the filter", unix.EPERM, true, landlock.Blocked, "seccomp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := landlock.Unavailable(tc.errno, tc.seccomp)
			assert.Equal(t, tc.want, err.Reason)
			assert.Contains(t, err.Error(), tc.says)
			assert.True(t, errors.Is(err, tc.errno))
		})
	}
	names := map[string]bool{}
	for _, r := range []landlock.Reason{landlock.NoKernelSupport, landlock.NotEnabled, landlock.Blocked, landlock.OldABI} {
		names[r.String()] = true
	}
	assert.Len(t, names, 4, "each reason has its own words")
	old := &landlock.UnavailableError{Reason: landlock.OldABI, ABI: 1}
	assert.Contains(t, old.Error(), "ABI is 1")
	assert.NoError(t, old.Unwrap())
}

func TestHandledAccess(t *testing.T) {
	const (
		refer    = unix.LANDLOCK_ACCESS_FS_REFER
		truncate = unix.LANDLOCK_ACCESS_FS_TRUNCATE
		ioctl    = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
		reads    = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_EXECUTE
		writes   = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
			unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
			unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
			unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	)
	tests := []struct {
		abi  int
		want uint64
	}{
		{2, writes | refer},
		{3, writes | refer | truncate},
		{4, writes | refer | truncate},
		{5, writes | refer | truncate | ioctl},
		{7, writes | refer | truncate | ioctl},
	}
	for _, tc := range tests {
		got := landlock.HandledAccess(tc.abi)
		assert.Equal(t, tc.want, got, "ABI %d", tc.abi)
		assert.Zero(t, got&reads, "ABI %d handles a read access", tc.abi)
	}
}

func TestWriteRights(t *testing.T) {
	const (
		ioctl  = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
		reads  = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_EXECUTE
		refer  = unix.LANDLOCK_ACCESS_FS_REFER
		trunc  = unix.LANDLOCK_ACCESS_FS_TRUNCATE
		newest = 1 << 20 // an ABI no go-landlock release knows yet
	)
	assert.Zero(t, landlock.WriteRights(0), "no Landlock, no rights")
	assert.Zero(t, uint64(landlock.WriteRights(1))&refer, "ABI 1 has no refer")
	for _, abi := range []int{1, 2, 3, 5, 11, newest} {
		w := uint64(landlock.WriteRights(abi))
		assert.NotZero(t, w&unix.LANDLOCK_ACCESS_FS_WRITE_FILE, "ABI %d", abi)
		assert.Zero(t, w&(reads|ioctl), "ABI %d: a command's reads, runs and terminal ioctls stay allowed", abi)
		assert.Equal(t, w, uint64(landlock.Preset(abi).HandledAccessFS)&w, "ABI %d: only rights the ABI knows", abi)
		if abi >= 3 {
			assert.Equal(t, uint64(refer|trunc), w&(refer|trunc), "ABI %d", abi)
		}
	}
	assert.Equal(t, landlock.Preset(11), landlock.Preset(newest), "a newer kernel is asked for the newest known rights")
}
