package protectscan

import "context"

// ScanCounted is Scan that also returns how many entries the scan read from
// directories not answered from the cache.
func (s *Scanner) ScanCounted(ctx context.Context, roots []Root, match Match) ([]Entry, int, error) {
	return s.scan(ctx, roots, match)
}

// len returns how many directories are cached.
func (c *dirCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.dirs)
}

// CachedDirs returns how many directories s's cache holds.
func (s *Scanner) CachedDirs() int { return s.cache.len() }
