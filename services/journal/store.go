package journal

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Options configure Open.
type Options struct {
	// Dir is the journal's directory, made (0700) when missing.
	Dir string
	// MaxBytes is the cap, in bytes, on the segments' total size: past it
	// the oldest whole segments are dropped. It must be positive.
	MaxBytes int64
	// SegmentBytes is the soft size, in bytes, at which the segment
	// appended to is closed and a new one started; 0 is MaxBytes/8 within
	// [64 KiB, 64 MiB].
	SegmentBytes int64
	// Sync makes each change's entry durable (one fdatasync) before the
	// change publishes: durability full.
	Sync bool
	// Log receives the drops of old segments (info) and torn tails cut
	// (warn); nil discards.
	Log *zap.Logger
}

// Journal is an open journal directory: segment files seg-NNNNNN of
// frames, appended under an flock of the file "lock", so several processes
// may share one directory. It is safe for concurrent use.
type Journal struct {
	opts Options
	log  *zap.Logger
	dir  int // directory descriptor
	lock int // descriptor of the lock file

	// mu serializes appends in this process (the flock, those of others).
	mu     sync.Mutex
	seg    *segment // the segment appended to; under mu
	closed bool     // Close ran; under mu
	// over is set when the last eviction left the total past the cap
	// (a segment it may not drop): every Prepare then evicts again.
	over bool
	// older is the total size, in bytes, of the segments other than the
	// one appended to, as the last eviction left them (they only shrink,
	// by drops); with the appended one's fstat size it is the total
	// Prepare's fast path checks against the cap. Under mu.
	older int64

	// rmu guards idx, the read index.
	rmu sync.Mutex
	idx index

	ids idSource

	// dropped counts the entries this process's evictions dropped.
	dropped atomic.Int64
}

// Stats are what a journal holds, for the server's metrics: Bytes, the
// size of its segments on disk now (every process's appends included),
// and Dropped, the entries this process dropped to stay within the cap
// since it opened the journal.
type Stats struct {
	Bytes, Dropped int64
}

// Stats returns the journal's Stats. It takes no lock: a segment dropped
// while it reads the directory counts as empty.
func (j *Journal) Stats() Stats {
	st := Stats{Dropped: j.dropped.Load()}
	entries, err := os.ReadDir(j.opts.Dir)
	if err != nil {
		return st
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), segPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil {
			st.Bytes += info.Size()
		}
	}
	return st
}

// segment is the open segment this process appends to: its number, its
// read-write descriptor, the end of its last whole frame (what this
// process has seen of it), and the blobs it holds (dedupe is per segment).
//
// Its descriptor lives as long as anything uses it: the Journal while the
// segment is the one appended to, and each Sync of an entry in it until
// its fdatasync is done. While a Sync is pending the descriptor holds a
// shared flock on the segment, so that no Journal (of this process or
// another) drops the segment under it (see evict).
type segment struct {
	num   int
	f     *os.File
	end   int64
	blobs map[[32]byte]struct{}

	rmu     sync.Mutex
	syncs   int  // Syncs pending on the segment; under rmu
	retired bool // the Journal let the segment go; under rmu
}

// hold counts one more Sync pending on the segment, taking the shared
// flock with the first. The caller holds the journal's mu and flock.
func (s *segment) hold() error {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.syncs == 0 {
		if err := flockFd(int(s.f.Fd()), unix.LOCK_SH); err != nil {
			return err
		}
	}
	s.syncs++
	return nil
}

// release ends one Sync pending on the segment: the last one drops the
// shared flock, and closes the descriptor when the Journal let it go.
func (s *segment) release() {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.syncs--
	if s.syncs > 0 {
		return
	}
	if s.retired {
		_ = s.f.Close() // the flock goes with the descriptor
		return
	}
	_ = unix.Flock(int(s.f.Fd()), unix.LOCK_UN)
}

// retire lets the segment go (a roll, Close): its descriptor closes now,
// or when the last Sync pending on it is done.
func (s *segment) retire() {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.retired = true
	if s.syncs == 0 {
		_ = s.f.Close()
	}
}

const (
	segPrefix  = "seg-"
	lockName   = "lock"
	dirPerm    = 0o700
	filePerm   = 0o600
	minSegment = 64 << 10
	maxSegment = 64 << 20
)

func segName(n int) string { return fmt.Sprintf("%s%06d", segPrefix, n) }

// Open opens (making it when missing) the journal in opts.Dir, cuts a torn
// tail off its newest segment, and drops the oldest segments while the
// total passes opts.MaxBytes: OpenDir, then Prepare(""). Errors are *Error
// with CodeFailed.
func Open(opts Options) (*Journal, error) {
	j, err := OpenDir(opts)
	if err != nil {
		return nil, err
	}
	if err := j.Prepare(""); err != nil {
		_ = j.Close()
		return nil, err
	}
	return j, nil
}

// OpenDir makes the journal's directory opts.Dir when missing and opens it
// and its lock file, nothing more: the first Prepare opens the newest
// segment (syncing the directory), cuts its torn tail and drops the oldest
// segments, so a server can answer before the journal is read and warm it
// up in the background (a change's own Prepare waits for that one). Errors
// are *Error with CodeFailed: a directory that cannot be made or opened
// (no home, a read-only one) or a lock file that cannot be created.
func OpenDir(opts Options) (*Journal, error) {
	if opts.MaxBytes <= 0 {
		return nil, newErr(CodeFailed, "open", nil, "the journal's cap must be positive, not %d bytes", opts.MaxBytes)
	}
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = min(max(opts.MaxBytes/8, minSegment), maxSegment)
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if err := os.MkdirAll(opts.Dir, dirPerm); err != nil {
		return nil, newErr(CodeFailed, "open", err, "cannot make the journal directory %q", opts.Dir)
	}
	dir, err := unix.Open(opts.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, newErr(CodeFailed, "open", err, "cannot open the journal directory %q", opts.Dir)
	}
	lock, err := unix.Openat(dir, lockName, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC|unix.O_NOFOLLOW, filePerm)
	if err != nil {
		_ = unix.Close(dir)
		return nil, newErr(CodeFailed, "open", err, "cannot open the journal's lock file in %q", opts.Dir)
	}
	j := &Journal{opts: opts, log: opts.Log, dir: dir, lock: lock}
	j.idx.segs = map[int]*segIndex{}
	return j, nil
}

// Close releases the journal's descriptors (a segment's once the Syncs
// pending on it are done); Prepare, Begin and Finish then fail with
// CodeFailed. Closing again does nothing.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if j.seg != nil {
		j.seg.retire()
		j.seg = nil
	}
	j.rmu.Lock()
	j.idx.close()
	j.rmu.Unlock()
	_ = unix.Close(j.lock)
	return unix.Close(j.dir)
}

// Dir returns the journal's directory.
func (j *Journal) Dir() string { return j.opts.Dir }

// MaxBytes returns the journal's cap in bytes.
func (j *Journal) MaxBytes() int64 { return j.opts.MaxBytes }

// Prepare makes the journal ready for the next change, of session ("" for
// none), opening files as needed: it switches to the newest segment when
// another process started one, starts a new segment when the current one
// reached the soft size, and then drops the oldest segments while the
// total passes the cap, but never one holding an entry of session: a
// change may not push out an earlier change of its own session. When only
// such a segment stands between the journal and its cap, the change is
// refused (CodeFull) and must not happen; the session's earlier changes
// stay undoable. Call it before the change's mutation runs: inside a
// Landlock domain that excludes the journal's directory no file of it can
// be opened, and Begin, the Txn's methods and Finish only write through
// descriptors already open. Errors are *Error with CodeFull or CodeFailed.
func (j *Journal) Prepare(session string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return j.open()
	}
	if j.seg != nil && !j.over && !j.stale() {
		return nil
	}
	if err := j.flock(); err != nil {
		return err
	}
	defer j.funlock()
	return j.prepareLocked(session)
}

// stale reports whether Prepare must take its slow path: the current
// segment reached the soft size, was dropped, or a newer one exists, or
// the journal's total (older and the current segment's size) passed the
// cap, so that the oldest segments go before the next change, not only
// once the current one rolls. The caller holds mu.
func (j *Journal) stale() bool {
	var st unix.Stat_t
	if err := unix.Fstat(int(j.seg.f.Fd()), &st); err != nil || st.Nlink == 0 || st.Size >= j.opts.SegmentBytes ||
		j.older+st.Size > j.opts.MaxBytes {
		return true
	}
	return unix.Fstatat(j.dir, segName(j.seg.num+1), &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// prepareLocked is Prepare under mu and the flock.
func (j *Journal) prepareLocked(session string) error {
	nums, err := j.segments()
	if err != nil {
		return err
	}
	if len(nums) == 0 {
		nums = []int{1}
	}
	newest := nums[len(nums)-1]
	if j.seg == nil || j.seg.num != newest {
		if err := j.openSegment(newest); err != nil {
			return err
		}
	}
	if err := j.catchUp(); err != nil {
		return err
	}
	if j.seg.end >= j.opts.SegmentBytes {
		if err := j.openSegment(newest + 1); err != nil {
			return err
		}
		nums = append(nums, newest+1)
	}
	return j.evict(nums, session)
}

// openSegment opens (creating) segment n as the one appended to.
func (j *Journal) openSegment(n int) error {
	f, err := os.OpenFile(filepath.Join(j.opts.Dir, segName(n)), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, filePerm)
	if err != nil {
		return newErr(CodeFailed, "open", err, "cannot open the journal segment %s", filepath.Join(j.opts.Dir, segName(n)))
	}
	if err := unix.Fsync(j.dir); err != nil {
		_ = f.Close()
		return newErr(CodeFailed, "open", err, "cannot sync the journal directory %q", j.opts.Dir)
	}
	if j.seg != nil {
		j.seg.retire() // a Sync pending on it keeps it open until done
	}
	j.seg = &segment{num: n, f: f, blobs: map[[32]byte]struct{}{}}
	return nil
}

// open reports a Journal closed (CodeFailed). The caller holds mu.
func (j *Journal) open() error {
	if j.closed || j.seg == nil {
		return newErr(CodeFailed, "record", nil, "the journal in %q is closed", j.opts.Dir)
	}
	return nil
}

// current makes the segment appended to ready for an append of a change
// of session ("" for none, or an outcome): when another Journal on the
// directory dropped it meanwhile it moves to the newest (prepareLocked, for
// session: opening a file, so outside a Landlock domain only), and it
// catches up. The caller holds mu and the flock.
func (j *Journal) current(session string) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(j.seg.f.Fd()), &st); err == nil && st.Nlink == 0 {
		return j.prepareLocked(session)
	}
	return j.catchUp()
}

// catchUp reads the frames other processes appended to the current segment
// since this one last looked (checking every CRC), indexing its blobs, and
// cuts a torn tail (a writer killed mid-append) so the next append follows
// the last whole frame. The caller holds mu and the flock.
func (j *Journal) catchUp() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(j.seg.f.Fd()), &st); err != nil {
		return newErr(CodeFailed, "record", err, "cannot stat the journal segment %s", segName(j.seg.num))
	}
	if st.Nlink == 0 {
		return newErr(CodeFailed, "record", nil, "the journal segment %s was dropped by another process meanwhile", segName(j.seg.num))
	}
	if st.Size == j.seg.end {
		return nil
	}
	end, err := scan(j.seg.f, j.seg.end, st.Size, true, func(f frame) error {
		if f.kind == kindBlob {
			j.seg.blobs[f.hash] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return newErr(CodeFailed, "record", err, "cannot read the journal segment %s", segName(j.seg.num))
	}
	if end < st.Size {
		j.log.Warn("journal: cut a torn tail (a writer stopped mid-append)",
			zap.String("segment", filepath.Join(j.opts.Dir, segName(j.seg.num))), zap.Int64("offset", end), zap.Int64("bytes", st.Size-end))
		if err := j.seg.f.Truncate(end); err != nil {
			return newErr(CodeFailed, "record", err, "cannot cut the torn tail of the journal segment %s", segName(j.seg.num))
		}
	}
	j.seg.end = end
	return nil
}

// segments lists the segment numbers in the directory, ascending.
func (j *Journal) segments() ([]int, error) {
	names, err := readDirNames(j.opts.Dir)
	if err != nil {
		return nil, newErr(CodeFailed, "open", err, "cannot list the journal directory %q", j.opts.Dir)
	}
	var nums []int
	for _, name := range names {
		if n, ok := parseSegName(name); ok {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	return nums, nil
}

func parseSegName(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, segPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read-only descriptor
	return f.Readdirnames(-1)
}

// evict drops the oldest segments of nums while the total size passes the
// cap, logging the ids of the entries each held and recording them in a
// dropped frame of the current segment, so that history can say they went.
// It never drops the current segment, and stops at one a Sync (of any
// process) is pending on: the total may then pass the cap until a later
// Prepare. It stops too at a segment holding an entry of session (not
// ""), and then, the total still past the cap, refuses session's change:
// *Error with CodeFull naming that entry. The caller holds mu and the
// flock.
func (j *Journal) evict(nums []int, session string) error {
	sizes := make([]int64, len(nums))
	var total int64
	for i, n := range nums {
		var st unix.Stat_t
		if err := unix.Fstatat(j.dir, segName(n), &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			sizes[i] = st.Size
			total += st.Size
		}
	}
	var (
		gone  []Entry
		frame []byte // the dropped frame recording gone, appended after
		mine  *Entry // the session's entry that stopped the eviction
	)
	for i := 0; total+int64(len(frame)) > j.opts.MaxBytes && i < len(nums) && nums[i] != j.seg.num; i++ {
		entries, ok, err := j.dropSegment(nums[i], session)
		if err != nil {
			return err
		}
		if !ok && len(entries) > 0 {
			mine = &entries[0]
			break
		}
		if !ok {
			// A Sync is pending on it: the oldest stays, and the cap
			// waits for a later Prepare.
			j.log.Debug("journal: kept the oldest segment past the cap while an entry in it syncs",
				zap.String("segment", segName(nums[i])), zap.Int64("total_bytes", total), zap.Int64("max_bytes", j.opts.MaxBytes))
			break
		}
		total -= sizes[i]
		ids := make([]string, len(entries))
		for k, e := range entries {
			ids[k] = e.ID
		}
		j.log.Info("journal: dropped the oldest segment to stay within the cap",
			zap.String("segment", segName(nums[i])), zap.Int64("bytes", sizes[i]), zap.Int64("max_bytes", j.opts.MaxBytes), zap.Strings("entries", ids))
		gone = append(gone, entries...)
		j.dropped.Add(int64(len(entries)))
		// The frame recording the drops counts against the cap too.
		payload, err := json.Marshal(dropped{Entries: gone})
		if err != nil {
			return newErr(CodeFailed, "evict", err, "cannot encode the dropped entries")
		}
		frame = appendFrame(frame[:0], kindDropped, payload)
	}
	j.older = total
	if i := slices.Index(nums, j.seg.num); i >= 0 {
		j.older -= sizes[i]
	}
	if len(frame) > 0 {
		if err := j.appendLocked(frame); err != nil {
			return err
		}
		total += int64(len(frame))
	}
	j.over = total > j.opts.MaxBytes
	if mine != nil && j.over {
		return newErr(CodeFull, "record", nil,
			"the journal is at its cap of %d bytes, and making room would drop this session's earlier change %s (%s %s), which could then not be undone: nothing was changed; undo or keep the earlier changes, ask the user to raise --journal-max-bytes, or start a new session",
			j.opts.MaxBytes, mine.ID, mine.Kind, strings.Join(mine.Paths, " -> "))
	}
	return nil
}

// dropSegment removes segment n and returns its entries without their
// After, for a dropped frame; ok is false, and nothing changes, while a
// Sync of this process or another is pending on it (its shared flock,
// entries nil), or when it holds an entry of session (not "": entries are
// that session's). The caller holds mu and the flock.
func (j *Journal) dropSegment(n int, session string) (entries []Entry, ok bool, err error) {
	f, err := os.Open(filepath.Join(j.opts.Dir, segName(n)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, newErr(CodeFailed, "evict", err, "cannot open the journal segment %s", segName(n))
	}
	defer f.Close() //nolint:errcheck // read-only descriptor; closing it drops the flock
	if err := flockFd(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, newErr(CodeFailed, "evict", err, "cannot lock the journal segment %s", segName(n))
	}
	st, err := f.Stat()
	if err != nil {
		return nil, false, newErr(CodeFailed, "evict", err, "cannot stat the journal segment %s", segName(n))
	}
	_, err = scan(f, 0, st.Size(), false, func(f frame) error {
		if f.kind != kindEntry {
			return nil
		}
		var e Entry
		if json.Unmarshal(f.payload, &e) == nil {
			e.After = nil
			entries = append(entries, e)
		}
		return nil
	})
	if err != nil {
		return nil, false, newErr(CodeFailed, "evict", err, "cannot read the journal segment %s", segName(n))
	}
	if mine := slices.DeleteFunc(slices.Clone(entries), func(e Entry) bool { return session == "" || e.Session != session }); len(mine) > 0 {
		return mine, false, nil
	}
	if err := unix.Unlinkat(j.dir, segName(n), 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, false, newErr(CodeFailed, "evict", err, "cannot drop the journal segment %s", segName(n))
	}
	return entries, true, nil
}

// appendLocked writes b at the end of the current segment. The caller
// holds mu and the flock, and caught up.
func (j *Journal) appendLocked(b []byte) error {
	if _, err := j.seg.f.WriteAt(b, j.seg.end); err != nil {
		_ = j.seg.f.Truncate(j.seg.end)
		return newErr(CodeFailed, "record", err, "cannot append to the journal segment %s", filepath.Join(j.opts.Dir, segName(j.seg.num)))
	}
	j.seg.end += int64(len(b))
	return nil
}

// flock takes the journal's exclusive cross-process lock.
func (j *Journal) flock() error {
	if err := flockFd(j.lock, unix.LOCK_EX); err != nil {
		return newErr(CodeFailed, "lock", err, "cannot lock the journal in %q", j.opts.Dir)
	}
	return nil
}

// flockFd is flock(2) of fd with how (LOCK_SH, LOCK_EX, | LOCK_NB),
// retried on EINTR.
func flockFd(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func (j *Journal) funlock() { _ = unix.Flock(j.lock, unix.LOCK_UN) }

// idSource makes entry ids: the time in nanoseconds since the epoch as 16
// hex digits, a dash, and 8 random hex digits fixed per process: they sort
// by time, and two processes never make the same one.
type idSource struct {
	mu     sync.Mutex
	last   int64
	suffix string
}

func (s *idSource) next(now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.suffix == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		s.suffix = hex.EncodeToString(b[:])
	}
	ns := now.UnixNano()
	if ns <= s.last {
		ns = s.last + 1
	}
	s.last = ns
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(ns))
	return hex.EncodeToString(b[:]) + "-" + s.suffix
}
