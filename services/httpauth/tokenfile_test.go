package httpauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/httpauth"
)

// The tokens of these tests, and their token-file hashes.
const (
	aliceToken = "7f3c1e9a0b5d4f2e8c6a1b3d5f7e9c0a2b4d6f8e0a1c3e5f7b9d1f3a5c7e9b0d"
	bobToken   = "bob-token-0123456789abcdef"
)

func hashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// writeTokenFile writes content to a fresh file with perm and returns its path.
func writeTokenFile(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	require.NoError(t, os.Chmod(path, perm)) // past the umask
	return path
}

func TestLoadTokenFile_RefusesBadInput(t *testing.T) {
	aliceHash := hashOf(aliceToken)
	tests := []struct {
		name    string
		content string
		perm    os.FileMode
		code    errcode.Code
		want    string
	}{
		{"one field", "alice\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: want `SUBJECT sha256:HEX64`"},
		{"three fields", "alice sha256:" + aliceHash + " extra\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: want"},
		{"raw token pasted instead of a hash", "alice " + aliceToken + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: the hash must begin with `sha256:`"},
		{"hash only, no subject", "sha256:" + aliceHash + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: want"},
		{"subject with a control character", "al\x01ice sha256:" + aliceHash + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: subject has a control or format character"},
		{"subject with a no-break space", "al\u00a0ice sha256:" + aliceHash + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: want `SUBJECT sha256:HEX64`"},
		{"subject with a byte-order mark", "\ufeffalice sha256:" + aliceHash + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: subject has a control or format character"},
		{"subject too long", strings.Repeat("a", 257) + " sha256:" + aliceHash + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: subject longer than 256 bytes"},
		{"hash 63 digits", "alice sha256:" + aliceHash[:63] + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: the hash must be 64 hex digits"},
		{"hash 65 digits", "alice sha256:" + aliceHash + "0\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: the hash must be 64 hex digits"},
		{"hash not hex", "alice sha256:" + strings.Repeat("g", 64) + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: the hash must be 64 hex digits"},
		{"other algorithm", "alice sha512:" + aliceHash + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: the hash must begin with `sha256:`"},
		{"hash of the empty token", "alice sha256:" + hashOf("") + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 1: the hash is of the empty token"},
		{"same hash twice", "# team\nalice sha256:" + aliceHash + "\n\nbob sha256:" + strings.ToUpper(aliceHash) + "\n", 0o600, httpauth.CodeTokenFileInvalid, "line 4: the same hash as line 2"},
		{"bad line after good ones", "alice sha256:" + aliceHash + "\nbob\n", 0o600, httpauth.CodeTokenFileInvalid, "line 2: want"},
		{"not UTF-8", "alice\xff sha256:" + aliceHash + "\n", 0o600, httpauth.CodeTokenFileInvalid, "not UTF-8"},
		{"only comments", "# nobody yet\n\n", 0o600, httpauth.CodeTokenFileInvalid, "no token"},
		{"empty", "", 0o600, httpauth.CodeTokenFileInvalid, "no token"},
		{"too large", "# " + strings.Repeat("x", 1<<20) + "\nalice sha256:" + aliceHash + "\n", 0o600, httpauth.CodeTokenFileInvalid, "larger than 1048576 bytes"},
		{"group writable", "alice sha256:" + aliceHash + "\n", 0o620, httpauth.CodeTokenFileUnsafe, "writable by group or others (mode 0620)"},
		{"others writable", "alice sha256:" + aliceHash + "\n", 0o602, httpauth.CodeTokenFileUnsafe, "writable by group or others (mode 0602)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTokenFile(t, tt.content, tt.perm)

			tf, err := httpauth.LoadTokenFile(path)

			require.Error(t, err)
			assert.Nil(t, tf)
			var e *httpauth.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.code, e.Code)
			assert.Contains(t, err.Error(), "token file "+path)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, strings.ToLower(err.Error()), aliceHash, "an error never quotes a hash")
			assert.NotContains(t, err.Error(), aliceToken, "an error never quotes a token")
			// Loading changes nothing on disk.
			got, rerr := os.ReadFile(path) //nolint:gosec // the test's own file
			require.NoError(t, rerr)
			assert.Equal(t, tt.content, string(got))
			fi, serr := os.Stat(path)
			require.NoError(t, serr)
			assert.Equal(t, tt.perm, fi.Mode().Perm())
		})
	}
}

func TestLoadTokenFile_RefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()

	_, err := httpauth.LoadTokenFile(dir)

	var e *httpauth.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, httpauth.CodeTokenFileUnsafe, e.Code)
	assert.Contains(t, err.Error(), "not a regular file")
}

func TestLoadTokenFile_MissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent")

	_, err := httpauth.LoadTokenFile(path)

	var e *httpauth.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, httpauth.CodeTokenFileInvalid, e.Code)
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), path)
}

func TestLoadTokenFile_RefusesAnotherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a file another user owns needs root")
	}
	path := writeTokenFile(t, "alice sha256:"+hashOf(aliceToken)+"\n", 0o600)
	require.NoError(t, os.Chown(path, 4242, 4242))

	_, err := httpauth.LoadTokenFile(path)

	var e *httpauth.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, httpauth.CodeTokenFileUnsafe, e.Code)
	assert.Contains(t, err.Error(), "owned by uid 4242")
	st, serr := os.Stat(path)
	require.NoError(t, serr)
	assert.Equal(t, uint32(4242), st.Sys().(*syscall.Stat_t).Uid, "the file is left as it was")
}

func TestTokenFile_Verify(t *testing.T) {
	content := "# agents\n" +
		"alice sha256:" + hashOf(aliceToken) + "\n" +
		"  \t\n" +
		"bob\tsha256:" + strings.ToUpper(hashOf(bobToken)) + "\n" +
		"alice sha256:" + hashOf("alice-second-token") + "   \n"
	// Readable by others is fine: a hash does not give the token back.
	tf, err := httpauth.LoadTokenFile(writeTokenFile(t, content, 0o644))
	require.NoError(t, err)
	oneByteOff := aliceToken[:len(aliceToken)-1] + "e"
	require.NotEqual(t, aliceToken, oneByteOff)

	tests := []struct {
		name    string
		token   string
		subject string // "" when refused
	}{
		{"alice's token", aliceToken, "alice"},
		{"bob's token, hash given in upper case", bobToken, "bob"},
		{"alice's second token", "alice-second-token", "alice"},
		{"wrong token", "not-a-token", ""},
		{"empty token", "", ""},
		{"one byte off", oneByteOff, ""},
		{"one byte short", aliceToken[:len(aliceToken)-1], ""},
		{"one byte more", aliceToken + "0", ""},
		{"the hash itself as the token", hashOf(aliceToken), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := tf.Verify(context.Background(), tt.token, nil)

			if tt.subject == "" {
				require.ErrorIs(t, err, auth.ErrInvalidToken)
				assert.Nil(t, info)
				var e *httpauth.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, httpauth.CodeInvalidToken, e.Code)
				assert.Equal(t, "invalid token: unknown token", err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.subject, info.UserID)
			assert.True(t, info.Expiration.IsZero(), "a static token does not expire")
		})
	}
}
