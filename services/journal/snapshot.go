package journal

import (
	"encoding/hex"
	"strings"
)

// This file is the store's part of command snapshots (services/cmdjournal,
// --journal-commands): contents kept without an entry when a command
// starts, and the entry recorded once it ended with the prior state its
// snapshot read.

// SetBefore sets the prior state of the change (Entry.Before) to nodes
// whose contents the caller stored (AddBlob, here or by an earlier Keep),
// instead of capturing it.
func (t *Txn) SetBefore(nodes []Node) { t.e.Before = nodes }

// Keep ends the Txn keeping the contents it added (AddBlob) without an
// entry, and releases the append lock: a command's snapshot, whose entry
// is recorded once the command has ended. It does not sync: the contents
// become durable with the next Commit's sync of the segment (the entry
// that names them copies them into its own segment when they are in an
// older one), and a snapshot whose command never gets an entry is not
// worth a sync. It returns the bytes stored and whether they were kept:
// false when their total passed the cap (nothing is kept, nothing fails).
// Errors are *Error with CodeFailed (nothing the Txn wrote remains).
func (t *Txn) Keep() (stored int64, kept bool, err error) {
	if t.done {
		return 0, false, newErr(CodeFailed, "record", nil, "the snapshot %s was already committed or aborted", t.e.ID)
	}
	t.done = true
	if t.over {
		t.abortLocked()
		return 0, false, nil
	}
	j := t.j
	if err := t.flush(); err != nil {
		t.abortLocked()
		return 0, false, err
	}
	j.seg.end = t.flushed
	for h := range t.blobs {
		j.seg.blobs[h] = struct{}{}
	}
	j.funlock()
	j.mu.Unlock()
	return t.stored, true, nil
}

// Lacks returns the keys ("sha256:<hex>") of keys whose content the
// journal does not hold (never stored, or dropped with its segment), in
// the order given. Errors are *Error with CodeFailed.
func (j *Journal) Lacks(keys []string) ([]string, error) {
	j.rmu.Lock()
	defer j.rmu.Unlock()
	if err := j.refresh(); err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		var h [32]byte
		raw, err := hex.DecodeString(strings.TrimPrefix(k, "sha256:"))
		if err != nil || len(raw) != 32 {
			out = append(out, k)
			continue
		}
		copy(h[:], raw)
		held := false
		for _, s := range j.idx.segs {
			if _, held = s.blobs[h]; held {
				break
			}
		}
		if !held {
			out = append(out, k)
		}
	}
	return out, nil
}
