package journal

import (
	"encoding/binary"
	"hash/crc32"
)

// A frame is headerLen bytes of header, then the payload: the payload's
// length in bytes (uint64, little endian), the CRC32C of the kind byte and
// the payload (uint32, little endian), and the kind.
const headerLen = 13

// The kinds of frame.
const (
	// kindBlob: a content, then the 32 bytes of its SHA-256 (last, so
	// that a content streamed in gets its CRC as it goes).
	kindBlob byte = 1
	// kindEntry: an Entry as JSON, written Pending before its change
	// publishes.
	kindEntry byte = 2
	// kindOutcome: an outcome as JSON, written after the change.
	kindOutcome byte = 3
	// kindDropped: the entries of a dropped segment as JSON (dropped).
	kindDropped byte = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// putHeader fills h (headerLen bytes) for a frame of kind whose payload is
// n bytes with CRC32C sum (see crcKind).
func putHeader(h []byte, kind byte, n uint64, sum uint32) {
	binary.LittleEndian.PutUint64(h[0:8], n)
	binary.LittleEndian.PutUint32(h[8:12], sum)
	h[12] = kind
}

// parseHeader reads a header.
func parseHeader(h []byte) (kind byte, n uint64, sum uint32) {
	return h[12], binary.LittleEndian.Uint64(h[0:8]), binary.LittleEndian.Uint32(h[8:12])
}

// crcKind starts the CRC32C of a frame of kind.
func crcKind(kind byte) uint32 { return crc32.Update(0, castagnoli, []byte{kind}) }

// appendFrame appends a whole frame of kind with payload to buf.
func appendFrame(buf []byte, kind byte, payload []byte) []byte {
	var h [headerLen]byte
	putHeader(h[:], kind, uint64(len(payload)), crc32.Update(crcKind(kind), castagnoli, payload))
	buf = append(buf, h[:]...)
	return append(buf, payload...)
}

// outcome is the payload of a kindOutcome frame: the entry's status after
// its change, and the state the change left when the caller knows it
// better after publication than before (nil keeps the entry's After).
type outcome struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	After  []Node `json:"after,omitempty"`
}

// dropped is the payload of a kindDropped frame: the entries (without
// their nodes) of a segment dropped to keep the journal within its cap.
type dropped struct {
	Entries []Entry `json:"entries"`
}
