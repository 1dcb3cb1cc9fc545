// Package textfile holds the pure text rules of the filesystem service that
// AI agents use to read and edit files. It performs no I/O.
//
// The rules cover these concerns, one file each:
//
//   - validate.go: deciding whether raw bytes are UTF-8 text (no NUL in the
//     first BinarySampleBytes bytes).
//   - encoding.go: UTF-16 with a byte-order mark, decoded and encoded with
//     golang.org/x/text, strictly (an unpaired surrogate is an error).
//   - decoder.go: the same decisions made incrementally over a stream of
//     chunks, with code points split across chunk boundaries.
//   - lineending.go: the optional byte order mark, counting a file's line
//     endings over the whole file, normalizing text to LF and restoring a
//     style.
//   - conventions.go: what a write over an existing file keeps (its mark,
//     its dominant line ending) and the note on what it changed.
//   - edit.go: applying an exact-string replacement that changes no byte
//     outside the replaced spans.
//   - hint.go: what a missing old string nearly matches.
//
// Agents always see and match text in LF-normalized form without the BOM;
// the file on disk keeps its own conventions.
package textfile
