package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Check reads the whole journal as it is on disk: every frame of every
// segment must parse, with its CRC, up to the segment's end (a torn tail,
// which Open and the next change cut, is reported too), and every content
// a kept entry's Before names must be there with its hash. It returns the
// number of entries read, or an *Error with CodeCorrupt naming the first
// problem (CodeFailed when the journal cannot be read). It reads every
// byte: a check, not a lookup.
func (j *Journal) Check() (int, error) {
	nums, err := j.segments()
	if err != nil {
		return 0, err
	}
	blobs := map[string]bool{}
	var entries []Entry
	for _, n := range nums {
		f, err := os.Open(filepath.Join(j.opts.Dir, segName(n)))
		if err != nil {
			return 0, newErr(CodeFailed, "check", err, "cannot open the journal segment %s", segName(n))
		}
		st, err := f.Stat()
		if err == nil {
			var end int64
			end, err = scan(f, 0, st.Size(), true, func(fr frame) error {
				switch fr.kind {
				case kindBlob:
					blobs["sha256:"+hex.EncodeToString(fr.hash[:])] = true
				case kindEntry:
					var e Entry
					if err := json.Unmarshal(fr.payload, &e); err != nil {
						return newErr(CodeCorrupt, "check", err, "an entry of %s at offset %d is not JSON", segName(n), fr.off)
					}
					entries = append(entries, e)
				}
				return nil
			})
			if err == nil && end != st.Size() {
				err = newErr(CodeCorrupt, "check", nil, "%s has %d bytes past its last whole frame (offset %d)", segName(n), st.Size()-end, end)
			}
		}
		_ = f.Close()
		if err != nil {
			if _, ok := errors.AsType[*Error](err); ok {
				return 0, err
			}
			return 0, newErr(CodeFailed, "check", err, "cannot read the journal segment %s", segName(n))
		}
	}
	checked := map[string]bool{}
	for _, e := range entries {
		if !e.Kept {
			continue
		}
		for _, node := range e.Before {
			if node.Hash == "" || checked[node.Hash] {
				continue
			}
			checked[node.Hash] = true
			if !blobs[node.Hash] {
				return 0, newErr(CodeCorrupt, "check", nil, "entry %s: the content %s of %s is missing", e.ID, node.Hash, node.Path)
			}
			if err := j.checkBlob(node.Hash); err != nil {
				return 0, fmt.Errorf("entry %s: %w", e.ID, err)
			}
		}
	}
	return len(entries), nil
}

// checkBlob reads the content hash through OpenBlob, which checks its CRC
// and hash at the end.
func (j *Journal) checkBlob(hash string) error {
	r, _, err := j.OpenBlob(hash)
	if err != nil {
		return err
	}
	defer r.Close() //nolint:errcheck // read-only
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return err
	}
	return nil
}
