//go:build linux

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

// NewWalking is New with the kept results off: every scan walks, answered
// from the cache where it can be (the cache's own tests).
func NewWalking(o Options) *Scanner {
	s := New(o)
	s.walkOnly = true
	return s
}

// ScanReused is Scan that also reports whether the scan took a result kept
// current by notifications instead of walking.
func (s *Scanner) ScanReused(ctx context.Context, roots []Root, match Match) ([]Entry, bool, error) {
	w, out, err := s.scanWalk(ctx, roots, match)
	return out, w.reused, err
}
