package fslocal

// LockTableSize returns the number of live lock-table entries (L-75).
func LockTableSize(f *FileSystem) int { return f.locks.size() }

// SetAfterStage installs a hook that runs between staging and publication.
func SetAfterStage(f *FileSystem, hook func(stagingDir, tempFile string)) { f.afterStage = hook }
