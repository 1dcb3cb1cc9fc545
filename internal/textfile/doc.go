// Package textfile holds the pure text rules of the filesystem service that
// AI agents use to read and edit files. It performs no I/O.
//
// The rules cover four concerns, one file each:
//
//   - validate.go: deciding whether raw bytes are text (no NUL in the first
//     BinarySampleBytes bytes) and valid UTF-8.
//   - decoder.go: the same decision made incrementally over a stream of
//     chunks, with multi-byte code points split across chunk boundaries.
//   - lineending.go: the optional UTF-8 byte order mark, detecting a file's
//     line-ending style, normalizing text to LF and restoring the style.
//   - edit.go: applying an exact-string replacement to a file's text while
//     preserving its BOM and line-ending style.
//
// Agents always see and match text in LF-normalized form without the BOM;
// the file on disk keeps its own conventions.
package textfile
