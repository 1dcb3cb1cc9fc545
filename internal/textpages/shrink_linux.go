package textpages

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Shrink maps the executable's read-only segments (its code and read-only
// data) with base pages from now on (MADV_NOHUGEPAGE) and unmaps them
// (MADV_DONTNEED): the pages the process goes on using come back from the
// page cache (minor faults, with the kernel's fault-around), and those it
// does not stop counting in its resident set. A kernel that keeps the
// executable in large folios (ext4 on Linux 6.x) maps them with 2 MiB
// entries, each counting whole however little of it was touched (16 MiB of
// a server's 33.8 MB VmRSS here were such, smaps' FilePmdMapped); with
// base pages too, a start touches a little of most of its code and data.
// An idle server, shrunk at its start and after its warm-up, holds 8.9 MB
// instead of 29.0 (issue 36's idle memory). Nothing another process uses
// is freed, and nothing is
// lost: only a mapping none of whose pages was written is unmapped (one
// the dynamic linker relocated, then made read-only, is left), so what
// comes back is what was there. The executable is found by the device and
// inode of /proc/self/exe among /proc/self/smaps' private mappings that are
// readable and not writable. It fails silently: a mapping it cannot find
// or advise stays as it was.
func Shrink() {
	var exe unix.Stat_t
	if unix.Stat("/proc/self/exe", &exe) != nil {
		return
	}
	maps, err := readMaps()
	if err != nil {
		return
	}
	for _, m := range maps {
		if m.ino != exe.Ino || m.dev != exe.Dev || m.written || (m.perms != "r-xp" && m.perms != "r--p") {
			continue
		}
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, m.lo, m.hi-m.lo, unix.MADV_NOHUGEPAGE)
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, m.lo, m.hi-m.lo, unix.MADV_DONTNEED)
	}
}

// mapping is one mapping of /proc/self/smaps: its address range [lo,
// hi), its permissions ("r-xp"), the device and inode of the file it maps,
// and whether any of its pages is anonymous, resident or swapped out (a
// private page written since it was mapped: the dynamic linker's
// relocations, made read-only after; MADV_DONTNEED would throw them away).
type mapping struct {
	lo, hi   uintptr
	perms    string
	dev, ino uint64
	written  bool
}

// readMaps returns the process's file mappings (/proc/self/smaps).
func readMaps() ([]mapping, error) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	var maps []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && (string(f[0]) == "Anonymous:" || string(f[0]) == "Swap:") {
			// A written page resident, or one swapped out (Anonymous
			// counts resident pages only).
			if len(maps) > 0 && string(f[1]) != "0" {
				maps[len(maps)-1].written = true
			}
			continue
		}
		// lo-hi perms offset major:minor inode [path]; an anonymous
		// mapping's header has no path, and is kept (with its inode, 0)
		// so that the lines after it are not taken for the one before.
		if len(f) < 5 || !bytes.Contains(f[0], []byte("-")) || len(f[1]) != 4 {
			continue
		}
		lo, hi, ok1 := bytes.Cut(f[0], []byte("-"))
		major, minor, ok2 := bytes.Cut(f[3], []byte(":"))
		if !ok1 || !ok2 {
			continue
		}
		l, err1 := strconv.ParseUint(string(lo), 16, 64)
		h, err2 := strconv.ParseUint(string(hi), 16, 64)
		maj, err3 := strconv.ParseUint(string(major), 16, 32)
		mnr, err4 := strconv.ParseUint(string(minor), 16, 32)
		ino, err5 := strconv.ParseUint(string(f[4]), 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || h <= l {
			continue
		}
		maps = append(maps, mapping{
			lo: uintptr(l), hi: uintptr(h), perms: string(f[1]),
			dev: unix.Mkdev(uint32(maj), uint32(mnr)), ino: ino,
		})
	}
	return maps, sc.Err()
}
