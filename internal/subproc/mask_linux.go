package subproc

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/internal/dirfd"
)

// maskFD is the descriptor of the first file mask's source: bwrap copies
// each (an empty read of /dev/null) into the 0000 file it binds. They sit
// above bwrap's arguments file (bwrapArgsFD).
const maskFD = bwrapArgsFD + 1

// maxFileMasks bounds the files one command's view masks (each costs a
// descriptor and a bind mount); more is refused (fail closed).
const maxFileMasks = 4096

// maskArgs returns bwrap's arguments that mask c.Masked, to come after
// every other bind: a directory as an empty read-only tmpfs, a file as an
// empty read-only file of mode 0000 read from the descriptors maskFD,
// maskFD+1, ... in the order of the files in c.Masked.
//
// A directory that holds a named socket (c.UnixSocketPaths) or an exposed
// file (c.Exposed) is left writable here: their mount points are made in it
// by socketArgs, which then makes it read-only (--remount-ro).
func maskArgs(c *Confinement) []string {
	var args []string
	fd := maskFD
	for _, m := range c.Masked {
		if m.Dir {
			perms := "0555"
			if m.Private {
				perms = "0700"
			}
			args = append(args, "--perms", perms, "--tmpfs", m.Path)
			if len(namedBeneath(c, m.Path)) == 0 {
				args = append(args, "--remount-ro", m.Path)
			}
			continue
		}
		args = append(args, "--perms", "0000", "--ro-bind-data", strconv.Itoa(fd), m.Path)
		fd++
	}
	for _, path := range c.etcBound {
		if path != "" {
			// Their sources follow the masks' (RunBwrap, etcSource).
			args = append(args, "--perms", "0644", "--ro-bind-data", strconv.Itoa(fd), path)
			fd++
		}
	}
	return args
}

// etcSource returns the source of one of a command's own files
// (Confinement.EtcFiles): a sealed memory file holding it, and where to
// bind it: the host's file at e.Path, symlinks resolved; nil and "" when
// the host has no regular file there, or masks hide it (a deny-read
// pattern naming it or a directory holding it: the mask stays, the
// command goes without its own file). Errors: the kernel refuses the
// memory file.
func etcSource(e EtcFile, masks []Masked) (*os.File, string, error) {
	path, err := filepath.EvalSymlinks(e.Path)
	if err != nil {
		return nil, "", nil //nolint:nilerr // no such file: nothing to bind over
	}
	if slices.ContainsFunc(masks, func(m Masked) bool { return m.Path == path || m.Dir && dirfd.Beneath(m.Path, path) }) {
		return nil, "", nil
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, "", nil //nolint:nilerr // the same
	}
	f, err := sealedFile(filepath.Base(path), []byte(e.Content))
	if err != nil {
		return nil, "", fmt.Errorf("the command's %s: %w", e.Path, err)
	}
	return f, path, nil
}

// maskSources opens /dev/null once for each file of c.Masked: the sources
// bwrap copies the file masks from. Close them once bwrap has started.
// Errors: more than maxFileMasks files; /dev/null cannot be opened.
func maskSources(c *Confinement) ([]*os.File, error) {
	var out []*os.File
	for _, m := range c.Masked {
		if m.Dir {
			continue
		}
		if len(out) == maxFileMasks {
			closeAll(out)
			return nil, fmt.Errorf("the deny-read set names more than %d files in the command's view; the command was not run", maxFileMasks)
		}
		f, err := os.Open(os.DevNull)
		if err != nil {
			closeAll(out)
			return nil, fmt.Errorf("opening the deny-read masks' source: %w", err)
		}
		out = append(out, f)
	}
	return out, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// checkMasks verifies, inside the finished view, that every masked path
// is its mask: a directory an empty read-only mount, a file an empty
// read-only regular file of mode 0000 (fail closed: a command never runs
// with a denied path readable).
func checkMasks(c *Confinement) error {
	for _, m := range c.Masked {
		if err := checkMask(m, namedBeneath(c, m.Path)); err != nil {
			return fmt.Errorf("the deny-read path %s is not masked in the command's view (%w); the command was not run", m.Path, err)
		}
	}
	return nil
}

// checkMask checks m is its mask; a directory's may hold the mount points
// of named, the named sockets and exposed files beneath it, and nothing
// else.
func checkMask(m Masked, named []string) error {
	fd, err := unix.Open(m.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return err
	}
	switch {
	case fs.Flags&unix.ST_RDONLY == 0:
		return fmt.Errorf("writable")
	case m.Dir && (st.Mode&unix.S_IFMT != unix.S_IFDIR || fs.Type != unix.TMPFS_MAGIC):
		return fmt.Errorf("not an empty tmpfs")
	case m.Dir:
		dir, err := unix.Open(m.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Close(dir) }()
		if !onlyEntries(dir, wayTo(m.Path, named)) {
			return fmt.Errorf("not empty")
		}
	case st.Mode != unix.S_IFREG || st.Size != 0:
		return fmt.Errorf("not an empty file of mode 0000")
	}
	return nil
}

// rootBind is how bwrap binds `/` for c: read-write under FullAccess,
// else read-only.
func rootBind(c *Confinement) string {
	if c.FullAccess {
		return "--bind"
	}
	return "--ro-bind"
}

// maskAncestors returns the directories strictly between each path of
// c.Masked and of the masked sockets that get a mask of their own
// (boundSocketMasks) and the deepest of c.WritableRoots holding
// it (`/` under FullAccess), parents first, each once, leaving out any at
// or beneath a protected path (read-only already) or /dev or /proc. A
// masked path in no writable root has none: a read-only area is never
// bound. Pinned, they keep a masked socket where its mask is too: a
// command cannot rename its directory to carry the socket out from under
// the mask of a later command that starts meanwhile.
func maskAncestors(c *Confinement) []string {
	seen := map[string]bool{}
	var out []string
	paths := make([]string, 0, len(c.Masked)+len(c.MaskedSockets))
	for _, m := range c.Masked {
		paths = append(paths, m.Path)
	}
	if !c.FullAccess {
		// Under FullAccess every host socket is beneath the root `/`:
		// pinning their directories (other processes' scratch among
		// them) would make each start race them, and the command may
		// rename anything anyway.
		paths = append(paths, boundSocketMasks(c)...)
	}
	for _, p := range paths {
		root := ""
		for _, r := range c.WritableRoots {
			if r != p && dirfd.Beneath(r, p) && len(r) > len(root) {
				root = r
			}
		}
		if root == "" {
			continue
		}
		for a := filepath.Dir(p); a != root && dirfd.Beneath(root, a); a = filepath.Dir(a) {
			if seen[a] || dirfd.Beneath("/dev", a) || dirfd.Beneath("/proc", a) ||
				slices.ContainsFunc(c.Protected, func(p Protected) bool { return dirfd.Beneath(p.Path, a) }) {
				continue
			}
			seen[a] = true
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })
	return out
}

// pinMasks returns maskAncestors(c) with the identity each has now
// (lstat). Errors: one is missing, or is not a directory (renamed or
// replaced since the masks were found); the command must not run.
func pinMasks(c *Confinement) ([]Protected, error) {
	var out []Protected
	for _, a := range maskAncestors(c) {
		var st unix.Stat_t
		if err := unix.Lstat(a, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil, fmt.Errorf("the directory %s, which holds a deny-read path or a masked socket, changed before the command started (%w); the command was not run",
				a, cmp.Or(err, error(unix.ENOTDIR)))
		}
		out = append(out, Protected{Path: a, Dev: uint64(st.Dev), Ino: st.Ino}) //nolint:unconvert // Dev is uint64 on most arches only
	}
	return out, nil
}

// checkPinned verifies, inside the finished view, that every pinned
// directory of c is, reached without any symlink, a mount root and still
// the directory pinned (device and inode): a bind that followed a symlink
// swapped in, or a directory renamed and remade, fails the check (fail
// closed).
func checkPinned(c *Confinement) error {
	for _, p := range c.Pinned {
		if err := checkPin(p); err != nil {
			return fmt.Errorf("the directory %s, which holds a deny-read path or a masked socket, is not pinned in the command's view (%w); the command was not run", p.Path, err)
		}
	}
	return nil
}

func checkPin(p Protected) error {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, p.Path, how)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &stx); err != nil {
		return err
	}
	switch {
	case unix.Mkdev(stx.Dev_major, stx.Dev_minor) != p.Dev || stx.Ino != p.Ino:
		return fmt.Errorf("another directory")
	case stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0:
		return fmt.Errorf("not a mount point")
	}
	return nil
}

// namedBeneath returns the named sockets (UnixSocketPaths) and the exposed
// files (Exposed) of c strictly beneath dir: what is bound into its mask.
func namedBeneath(c *Confinement, dir string) []string {
	var out []string
	for _, p := range slices.Concat(c.UnixSocketPaths, c.Exposed) {
		if p != dir && dirfd.Beneath(dir, p) {
			out = append(out, p)
		}
	}
	return out
}

// wayTo returns the names of dir's entries on the way to each of paths
// (each strictly beneath dir).
func wayTo(dir string, paths []string) map[string]bool {
	out := map[string]bool{}
	for _, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err == nil {
			first, _, _ := strings.Cut(rel, "/")
			out[first] = true
		}
	}
	return out
}

// onlyEntries reports whether the directory fd holds no entry but those
// named in allowed (besides "." and "..").
func onlyEntries(fd int, allowed map[string]bool) bool {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return false
	}
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return false
		}
		if n <= 0 {
			return true
		}
		// ParseDirent leaves "." and ".." out.
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if !allowed[name] {
				return false
			}
		}
	}
}
