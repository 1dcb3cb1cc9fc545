//go:build linux

package fsbackend

// mounted is a backend that embeds a *Backend (fslocal.FileSystem,
// fssandbox.FileSystem): the unexported core method below is promoted to it.
type mounted interface{ core() *Backend }

func (f *Backend) core() *Backend { return f }

// LockTableSize returns the number of live lock-table entries of the core
// svc embeds (L-75).
func LockTableSize(svc mounted) int {
	l := &svc.core().locks
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// SetAfterStage installs on the core svc embeds a hook that runs between
// staging and publication.
func SetAfterStage(svc mounted, hook func(stagingDir, tempFile string)) {
	svc.core().afterStage = hook
}

// SetMaxTreeNames lowers, on the core svc embeds, the names a tree listing
// reads before it stops opening subdirectories (fs.MaxListTreeNames).
func SetMaxTreeNames(svc mounted, n int) {
	svc.core().treeNames = n
}
