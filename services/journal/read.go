package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// index is what this process has read of the journal: per segment, the
// frames up to the last whole one. Readers never take the append lock; a
// frame being appended is not whole yet and is read on a later call.
type index struct {
	segs map[int]*segIndex
}

type segIndex struct {
	f        *os.File
	end      int64
	entries  []Entry
	outcomes []outcome
	dropped  []Entry
	blobs    map[[32]byte]blobLoc
}

// blobLoc is where a blob's frame is: its segment, the offset of its
// content, the content's length, and the frame's CRC.
type blobLoc struct {
	seg int
	off int64
	n   int64
	crc uint32
}

func (x *index) close() {
	for n, s := range x.segs {
		_ = s.f.Close()
		delete(x.segs, n)
	}
}

// refresh reads what was appended since the last call and forgets the
// segments dropped meanwhile. The caller holds rmu.
func (j *Journal) refresh() error {
	nums, err := j.segments()
	if err != nil {
		return err
	}
	for n, s := range j.idx.segs {
		if !slices.Contains(nums, n) {
			_ = s.f.Close()
			delete(j.idx.segs, n)
		}
	}
	for _, n := range nums {
		s := j.idx.segs[n]
		if s == nil {
			f, err := os.Open(filepath.Join(j.opts.Dir, segName(n)))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return newErr(CodeFailed, "read", err, "cannot open the journal segment %s", segName(n))
			}
			s = &segIndex{f: f, blobs: map[[32]byte]blobLoc{}}
			j.idx.segs[n] = s
		}
		st, err := s.f.Stat()
		if err != nil {
			return newErr(CodeFailed, "read", err, "cannot stat the journal segment %s", segName(n))
		}
		end, err := scan(s.f, s.end, st.Size(), false, func(f frame) error {
			switch f.kind {
			case kindBlob:
				var h [headerLen]byte
				if err := preadFull(s.f, h[:], f.off); err != nil {
					return err
				}
				_, _, crc := parseHeader(h[:])
				s.blobs[f.hash] = blobLoc{seg: n, off: f.off + headerLen, n: f.n - 32, crc: crc}
			case kindEntry:
				var e Entry
				if json.Unmarshal(f.payload, &e) == nil {
					s.entries = append(s.entries, e)
				}
			case kindOutcome:
				var o outcome
				if json.Unmarshal(f.payload, &o) == nil {
					s.outcomes = append(s.outcomes, o)
				}
			case kindDropped:
				var d dropped
				if json.Unmarshal(f.payload, &d) == nil {
					s.dropped = append(s.dropped, d.Entries...)
				}
			}
			return nil
		})
		if err != nil {
			return newErr(CodeFailed, "read", err, "cannot read the journal segment %s", segName(n))
		}
		s.end = end
	}
	return nil
}

// ListOptions filter List.
type ListOptions struct {
	// Session keeps only the entries of this session ("" keeps all).
	Session string
}

// List returns the journal's entries, oldest first, each with its latest
// status (and the After its outcome gave), including the entries whose
// segment was dropped to stay within the cap (Dropped set, Status Dropped,
// nothing of their content left), filtered by opts. Errors are *Error with
// CodeFailed.
func (j *Journal) List(opts ListOptions) ([]Entry, error) {
	j.rmu.Lock()
	defer j.rmu.Unlock()
	if err := j.refresh(); err != nil {
		return nil, err
	}
	return j.entries(opts), nil
}

// entries merges the index's segments. The caller holds rmu.
func (j *Journal) entries(opts ListOptions) []Entry {
	nums := make([]int, 0, len(j.idx.segs))
	for n := range j.idx.segs {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	byID := map[string]*Entry{}
	var all []*Entry
	add := func(e Entry) {
		if _, ok := byID[e.ID]; ok || (opts.Session != "" && e.Session != opts.Session) {
			return
		}
		p := &e
		byID[e.ID] = p
		all = append(all, p)
	}
	for _, n := range nums {
		for _, e := range j.idx.segs[n].entries {
			add(e)
		}
	}
	for _, n := range nums {
		for _, e := range j.idx.segs[n].dropped {
			e.Dropped, e.Status = true, Dropped
			add(e)
		}
	}
	for _, n := range nums {
		for _, o := range j.idx.segs[n].outcomes {
			if e := byID[o.ID]; e != nil && !e.Dropped {
				e.Status = o.Status
				if o.After != nil {
					e.After = o.After
				}
			}
		}
	}
	slices.SortFunc(all, func(a, b *Entry) int { return strings.Compare(a.ID, b.ID) })
	out := make([]Entry, len(all))
	for i, e := range all {
		out[i] = *e
	}
	return out
}

// Get returns the entry id with its latest status. Errors are *Error:
// CodeNotFound (no such entry), CodeDropped (its segment was dropped to
// stay within the cap: the entry is returned too, Dropped set, without
// its content), CodeFailed.
func (j *Journal) Get(id string) (Entry, error) {
	j.rmu.Lock()
	defer j.rmu.Unlock()
	if err := j.refresh(); err != nil {
		return Entry{}, err
	}
	for _, e := range j.entries(ListOptions{}) {
		if e.ID != id {
			continue
		}
		if e.Dropped {
			return e, newErr(CodeDropped, "get", nil, "the journal entry %s was dropped to keep the journal within its cap of %d bytes", id, j.opts.MaxBytes)
		}
		return e, nil
	}
	return Entry{}, newErr(CodeNotFound, "get", nil, "no journal entry has the id %q", id)
}

// OpenBlob opens the content whose key is hash ("sha256:<hex>") and returns
// it with its length in bytes. Reading it to the end checks its CRC and
// its hash (a mismatch is an *Error with CodeCorrupt). Errors: *Error with
// CodeNotFound (a malformed key, or no such content), CodeDropped (the
// content of a dropped entry), CodeFailed.
func (j *Journal) OpenBlob(hash string) (io.ReadCloser, int64, error) {
	raw, err := hex.DecodeString(strings.TrimPrefix(hash, "sha256:"))
	if err != nil || len(raw) != 32 || !strings.HasPrefix(hash, "sha256:") {
		return nil, 0, newErr(CodeNotFound, "read", nil, "%q is not a content key (sha256:<64 hex digits>)", hash)
	}
	var h [32]byte
	copy(h[:], raw)
	j.rmu.Lock()
	defer j.rmu.Unlock()
	if err := j.refresh(); err != nil {
		return nil, 0, err
	}
	for _, s := range j.idx.segs {
		loc, ok := s.blobs[h]
		if !ok {
			continue
		}
		f, err := os.Open(filepath.Join(j.opts.Dir, segName(loc.seg)))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, 0, newErr(CodeFailed, "read", err, "cannot open the journal segment %s", segName(loc.seg))
		}
		return &blobReader{
			f: f, r: io.NewSectionReader(f, loc.off, loc.n), loc: loc, key: hash, want: h,
			crc: crcKind(kindBlob), sum: sha256.New(),
		}, loc.n, nil
	}
	for _, e := range j.entries(ListOptions{}) {
		if !e.Dropped {
			continue
		}
		for _, n := range e.Before {
			if n.Hash == hash {
				return nil, 0, newErr(CodeDropped, "read", nil, "the content %s (of %s, entry %s) was dropped to keep the journal within its cap of %d bytes", hash, n.Path, e.ID, j.opts.MaxBytes)
			}
		}
	}
	return nil, 0, newErr(CodeNotFound, "read", nil, "the journal holds no content %s", hash)
}

// blobReader reads one blob, checking its CRC and hash at the end.
type blobReader struct {
	f    *os.File
	r    *io.SectionReader
	loc  blobLoc
	key  string
	want [32]byte
	crc  uint32
	sum  hash.Hash
}

func (b *blobReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.crc = crc32.Update(b.crc, castagnoli, p[:n])
	b.sum.Write(p[:n])
	if err == io.EOF {
		if crc32.Update(b.crc, castagnoli, b.want[:]) != b.loc.crc || !slices.Equal(b.sum.Sum(nil), b.want[:]) {
			return n, newErr(CodeCorrupt, "read", nil, "the journal's content %s does not match its checksum", b.key)
		}
	}
	return n, err
}

func (b *blobReader) Close() error { return b.f.Close() }
