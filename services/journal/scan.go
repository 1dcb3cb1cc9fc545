package journal

import (
	"hash/crc32"
	"io"
)

// maxMetaFrame bounds the payload of a frame that is not a blob (an entry,
// an outcome, a dropped list): a larger length is a torn or foreign header.
const maxMetaFrame = 256 << 20

// scanChunk is the read size of a blob's content while its CRC is checked.
const scanChunk = 256 << 10

// frame is one whole frame found by scan: its kind, offset of its header,
// payload length, the payload itself for every kind but a blob (valid only
// during the call of scan's fn: the next frame reuses it), and a blob's
// hash.
type frame struct {
	kind    byte
	off     int64
	n       int64
	payload []byte
	hash    [32]byte
}

// scan reads the frames of the segment fd (size bytes long) from off, calls
// fn with each whole one, and returns the offset just past the last whole
// frame: a frame cut short, with a bad header or a CRC that does not match
// ends the scan there (a torn tail). Blob contents are read and checked
// when checkBlobs is set, else only their length is (entries and outcomes
// are always checked). An error from reading or from fn stops the scan.
func scan(fd io.ReaderAt, off, size int64, checkBlobs bool, fn func(frame) error) (int64, error) {
	var (
		h    [headerLen]byte
		buf  []byte // the blobs' read buffer and
		meta []byte // the other frames' payloads, reused through the scan
	)
	for off+headerLen <= size {
		if err := preadFull(fd, h[:], off); err != nil {
			return off, err
		}
		kind, n, sum := parseHeader(h[:])
		body := off + headerLen
		if n > uint64(size-body) || kind < kindBlob || kind > kindDropped {
			return off, nil
		}
		f := frame{kind: kind, off: off, n: int64(n)}
		switch kind {
		case kindBlob:
			if n < 32 {
				return off, nil
			}
			if err := preadFull(fd, f.hash[:], body+int64(n)-32); err != nil {
				return off, err
			}
			if checkBlobs {
				if size := min(int(n), scanChunk); cap(buf) < size {
					buf = make([]byte, size)
				}
				ok, err := checkCRC(fd, buf[:min(int(n), scanChunk)], body, int64(n), sum, kind)
				if err != nil {
					return off, err
				}
				if !ok {
					return off, nil
				}
			}
		default:
			if n > maxMetaFrame {
				return off, nil
			}
			if cap(meta) < int(n) {
				meta = make([]byte, n)
			}
			f.payload = meta[:n]
			if err := preadFull(fd, f.payload, body); err != nil {
				return off, err
			}
			if crc32.Update(crcKind(kind), castagnoli, f.payload) != sum {
				return off, nil
			}
		}
		if err := fn(f); err != nil {
			return off, err
		}
		off = body + int64(n)
	}
	return off, nil
}

// checkCRC reports whether the n bytes at off of fd have the CRC32C sum
// (with the kind byte first), reading them through buf.
func checkCRC(fd io.ReaderAt, buf []byte, off, n int64, sum uint32, kind byte) (bool, error) {
	crc := crcKind(kind)
	for done := int64(0); done < n; {
		b := buf[:min(n-done, int64(len(buf)))]
		if err := preadFull(fd, b, off+done); err != nil {
			return false, err
		}
		crc = crc32.Update(crc, castagnoli, b)
		done += int64(len(b))
	}
	return crc == sum, nil
}

// preadFull reads len(b) bytes at off; fewer is io.ErrUnexpectedEOF.
func preadFull(fd io.ReaderAt, b []byte, off int64) error {
	n, err := fd.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
