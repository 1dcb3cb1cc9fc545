package cgroup

// GroupDirs are g's directories, one per hierarchy.
func GroupDirs(g *Group) []string { return g.b.dirs() }

// ParentDirs are the directories of m's parent group, one per hierarchy.
func ParentDirs(m *Manager) []string { return m.b.dirs() }

// RemoveStale is removeStale, for tests.
func RemoveStale(parentDir string) { removeStale(parentDir) }
