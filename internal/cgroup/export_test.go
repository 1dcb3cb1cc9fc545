//go:build linux

package cgroup

// GroupDirs are g's directories, one per hierarchy.
func GroupDirs(g *Group) []string { return g.b.dirs() }

// ParentDirs are the directories of m's parent group, one per hierarchy.
func ParentDirs(m *Manager) []string { return backendDirs(m.b) }

// backendDirs are a parent group's directories, one per hierarchy.
func backendDirs(b backend) []string {
	switch b := b.(type) {
	case *v1Backend:
		return []string{b.memDir, b.pidsDir}
	case *v2Backend:
		return []string{b.dir}
	}
	return nil
}

// RemoveStale is removeStale, for tests.
func RemoveStale(parentDir string) { removeStale(parentDir) }
