package mcpserver

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// Limits of the approval states a connection keeps.
const (
	// maxPendingApprovals bounds the unanswered approval requests kept per
	// connection; the oldest is dropped beyond it.
	maxPendingApprovals = 64
	// approvalTTL is how long an approval request stays answerable.
	approvalTTL = 15 * time.Minute
)

// approvals are the approval requests a 2026-07-28 connection has issued and
// not yet seen answered. The request state sent with each is
// "approval:<nonce>:<mac>", the mac an HMAC-SHA256 under the server's key of
// the nonce and the call's binding; an answer counts only with a state this
// server issued for exactly that call, and only once.
type approvals struct {
	mu      sync.Mutex
	pending map[string]time.Time // nonce -> issued at
}

// issue records a new request for binding and returns its state.
func (a *approvals) issue(key, binding []byte) string {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // crypto/rand never fails on Linux
	n := hex.EncodeToString(nonce)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		a.pending = map[string]time.Time{}
	}
	a.expire()
	if len(a.pending) >= maxPendingApprovals {
		oldest, at := "", time.Time{}
		for k, t := range a.pending {
			if oldest == "" || t.Before(at) {
				oldest, at = k, t
			}
		}
		delete(a.pending, oldest)
	}
	a.pending[n] = time.Now()
	return "approval:" + n + ":" + hex.EncodeToString(mac(key, n, binding))
}

// redeem reports whether state was issued by this server for binding and is
// still unanswered, and consumes it.
func (a *approvals) redeem(key []byte, state string, binding []byte) bool {
	rest, ok := strings.CutPrefix(state, "approval:")
	if !ok {
		return false
	}
	n, sum, ok := strings.Cut(rest, ":")
	got, err := hex.DecodeString(sum)
	if !ok || err != nil || !hmac.Equal(got, mac(key, n, binding)) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expire()
	if _, live := a.pending[n]; !live {
		return false
	}
	delete(a.pending, n)
	return true
}

func (a *approvals) expire() {
	for k, t := range a.pending {
		if time.Since(t) > approvalTTL {
			delete(a.pending, k)
		}
	}
}

func mac(key []byte, nonce string, binding []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(nonce))
	m.Write([]byte{0})
	m.Write(binding)
	return m.Sum(nil)
}
