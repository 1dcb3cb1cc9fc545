package httpauth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/sys/unix"
)

// The token file's limits.
const (
	// maxTokenFileBytes bounds the file read: a list of principals, not a
	// database (about 10,000 lines).
	maxTokenFileBytes = 1 << 20
	// maxSubjectBytes bounds a subject: a principal's name.
	maxSubjectBytes = 256
	// hashPrefix introduces a line's hash.
	hashPrefix = "sha256:"
)

// TokenFile is a verified list of static tokens, each held only as the
// SHA-256 of the token and the subject it authenticates. A subject may have
// several tokens (one per agent, or an old and a new one while rotating);
// a hash appears once.
type TokenFile struct {
	entries []tokenEntry
}

type tokenEntry struct {
	subject string
	hash    [sha256.Size]byte
}

// LoadTokenFile reads and checks the token file at path: UTF-8 lines
// `SUBJECT sha256:HEX64` (HEX64 is the SHA-256 of the token in hex), blank
// lines and lines whose first non-blank character is `#` ignored.
//
// It returns an *Error with CodeTokenFileUnsafe when the file is not a
// regular file, is writable by group or others, or is owned by a user other
// than the process's and root; and with CodeTokenFileInvalid when it cannot
// be read, is over 1 MiB, holds no token, or a line is malformed (not two
// fields separated by blanks, a subject with a control or format character
// or over 256 bytes, a hash that is not `sha256:` and 64 hex digits, the
// hash of the empty token, a hash already on an earlier line). Errors name
// the file and line, never a hash or the line's text. It logs nothing.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path) //nolint:gosec // the operator names the file
	if err != nil {
		return nil, newErr(CodeTokenFileInvalid, err, "token file %s", path)
	}
	defer f.Close() //nolint:errcheck // read only
	if err := checkTokenFileSafe(f, path); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	if err != nil {
		return nil, newErr(CodeTokenFileInvalid, err, "token file %s", path)
	}
	if len(data) > maxTokenFileBytes {
		return nil, newErr(CodeTokenFileInvalid, nil, "token file %s: larger than %d bytes", path, maxTokenFileBytes)
	}
	return parseTokenFile(data, path)
}

// checkTokenFileSafe refuses a file whose tokens someone other than its
// owner could change. It checks the open file (fstat), not the path, so a
// file swapped in after the check is not the one read.
func checkTokenFileSafe(f *os.File, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil { //nolint:gosec // a descriptor fits an int
		return newErr(CodeTokenFileInvalid, err, "token file %s", path)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return newErr(CodeTokenFileUnsafe, nil, "token file %s: not a regular file", path)
	}
	if perm := st.Mode & 0o777; perm&0o022 != 0 {
		return newErr(CodeTokenFileUnsafe, nil,
			"token file %s: writable by group or others (mode %04o), so anyone in them could add a token; run chmod go-w on it",
			path, perm)
	}
	// Fail closed: a file another user owns is theirs to change.
	if uid := uint32(os.Geteuid()); st.Uid != uid && st.Uid != 0 { //nolint:gosec // a uid fits a uint32
		return newErr(CodeTokenFileUnsafe, nil,
			"token file %s: owned by uid %d, neither this process's user (uid %d) nor root, who could add a token",
			path, st.Uid, uid)
	}
	return nil
}

// emptyTokenHash is the SHA-256 of the empty token: an entry with it would
// accept an empty bearer token.
var emptyTokenHash = sha256.Sum256(nil)

func parseTokenFile(data []byte, path string) (*TokenFile, error) {
	if !utf8.Valid(data) {
		return nil, newErr(CodeTokenFileInvalid, nil, "token file %s: not UTF-8", path)
	}
	tf := &TokenFile{}
	firstLine := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxTokenFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseTokenLine(line)
		if err != nil {
			return nil, newErr(CodeTokenFileInvalid, nil, "token file %s line %d: %s", path, n, err)
		}
		if first, dup := firstLine[e.hash]; dup {
			return nil, newErr(CodeTokenFileInvalid, nil,
				"token file %s line %d: the same hash as line %d (one token, one subject)", path, n, first)
		}
		firstLine[e.hash] = n
		tf.entries = append(tf.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, newErr(CodeTokenFileInvalid, err, "token file %s", path)
	}
	if len(tf.entries) == 0 {
		return nil, newErr(CodeTokenFileInvalid, nil, "token file %s: no token (want lines `SUBJECT sha256:HEX64`)", path)
	}
	return tf, nil
}

// parseTokenLine parses one non-blank, non-comment line. Its errors never
// quote the line: a token pasted by mistake must not reach a log.
func parseTokenLine(line string) (tokenEntry, error) {
	fields := strings.Fields(line)
	if len(fields) != 2 {
		return tokenEntry{}, errors.New("want `SUBJECT sha256:HEX64` (two fields separated by blanks)")
	}
	subject, hashText := fields[0], fields[1]
	if len(subject) > maxSubjectBytes {
		return tokenEntry{}, errors.New("subject longer than 256 bytes")
	}
	// Blanks (Unicode's too) already split fields.
	if strings.IndexFunc(subject, func(r rune) bool { return !unicode.IsGraphic(r) }) >= 0 {
		return tokenEntry{}, errors.New("subject has a control or format character")
	}
	hexText, ok := strings.CutPrefix(hashText, hashPrefix)
	if !ok {
		return tokenEntry{}, errors.New("the hash must begin with `sha256:`")
	}
	var e tokenEntry
	if len(hexText) != hex.EncodedLen(sha256.Size) {
		return tokenEntry{}, errors.New("the hash must be 64 hex digits")
	}
	if _, err := hex.Decode(e.hash[:], []byte(hexText)); err != nil {
		return tokenEntry{}, errors.New("the hash must be 64 hex digits")
	}
	if e.hash == emptyTokenHash {
		return tokenEntry{}, errors.New("the hash is of the empty token")
	}
	e.subject = subject
	return e, nil
}

// Verify is an auth.TokenVerifier: it hashes token with SHA-256 and
// compares the hash with every entry in constant time (no early exit, so
// the time taken says nothing about which entry, if any, matched). It
// returns TokenInfo{UserID: the entry's subject} with a zero Expiration (a
// static token does not expire: Middleware accepts a zero Expiration), or
// an *Error with CodeInvalidToken wrapping auth.ErrInvalidToken.
func (tf *TokenFile) Verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range tf.entries {
		match := subtle.ConstantTimeCompare(sum[:], tf.entries[i].hash[:])
		found = subtle.ConstantTimeSelect(match, i, found)
	}
	if found < 0 {
		return nil, invalidToken("unknown token")
	}
	return &auth.TokenInfo{UserID: tf.entries[found].subject}, nil
}

// A compile-time check that Verify is a token verifier.
var _ auth.TokenVerifier = (*TokenFile)(nil).Verify
