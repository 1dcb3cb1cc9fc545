package execsandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"

	"github.com/moby/sys/mountinfo"

	"github.com/dsh-go/harness/internal/dirfd"
)

// maxMountTables bounds the tasks of one network namespace whose mount
// tables its paths are read through (a namespace shared by the containers
// of one pod has a mount table per container), so a namespace of many
// tasks costs a command no more than this many reads.
const maxMountTables = 64

// mountTable parses the mount table at path (a task's mountinfo).
func mountTable(path string) ([]*mountinfo.Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return mountinfo.GetMountsFromReader(f, nil)
}

// hostPaths returns the paths here (ours: the reader's mount table) of
// l's sockets as they read in the mount namespace of each of l's tasks
// (their mountinfo, of the first maxMountTables tasks, each distinct table
// used once): a
// socket a container bound at /run/app.sock on a volume bound from
// /srv/app is /srv/app/app.sock here. A path whose mount is of a
// filesystem not mounted here (the container's own root, a tmpfs of its
// own) has none: it is not reachable from here by a path. A task whose
// table cannot be read (it ended) is skipped.
func hostPaths(l listing, ours []*mountinfo.Info) []string {
	var out []string
	read := map[string]bool{}
	for _, task := range l.tasks[:min(len(l.tasks), maxMountTables)] {
		b, err := os.ReadFile(filepath.Join(task, "mountinfo"))
		if err != nil || read[string(b)] {
			continue
		}
		read[string(b)] = true
		theirs, err := mountinfo.GetMountsFromReader(bytes.NewReader(b), nil)
		if err != nil {
			continue
		}
		for _, p := range l.paths {
			for _, h := range translate(p, theirs, ours) {
				if !slices.Contains(out, h) {
					out = append(out, h)
				}
			}
		}
	}
	return out
}

// translate returns the paths in the mount table ours that name the file
// at p in the mount table theirs: p's mount there (the deepest mount point
// holding it, the last mounted of those stacked on one), the file's path
// within that filesystem (the mount's root joined with the rest of p), and
// each mount here of that filesystem (same device) whose root holds it.
func translate(p string, theirs, ours []*mountinfo.Info) []string {
	var m *mountinfo.Info
	for _, t := range theirs {
		if dirfd.Beneath(t.Mountpoint, p) && (m == nil || len(t.Mountpoint) >= len(m.Mountpoint)) {
			m = t
		}
	}
	if m == nil {
		return nil
	}
	rest, err := filepath.Rel(m.Mountpoint, p)
	if err != nil {
		return nil
	}
	src := filepath.Join(m.Root, rest)
	var out []string
	for _, o := range ours {
		if o.Major != m.Major || o.Minor != m.Minor || !dirfd.Beneath(o.Root, src) {
			continue
		}
		within, err := filepath.Rel(o.Root, src)
		if err != nil {
			continue
		}
		out = append(out, filepath.Join(o.Mountpoint, within))
	}
	return out
}
