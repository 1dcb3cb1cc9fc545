package weakmap_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/dsh-go/harness/internal/weakmap"
)

// TestLiveKeysStay: an entry of a live key survives any number of
// collections, even while dead keys' cleanups run and their memory is
// reused for new keys.
func TestLiveKeysStay(t *testing.T) {
	var m weakmap.Map[key, int]
	for i := range 2000 {
		func() { m.LoadOrStore(&key{i}, i) }() // dies at once
		k := &key{-i}
		m.LoadOrStore(k, -i)
		runtime.GC()
		time.Sleep(10 * time.Microsecond) // let queued cleanups run
		if v, ok := m.Load(k); !ok || v != -i {
			t.Fatalf("iteration %d: a live key's entry vanished (%v, %v)", i, v, ok)
		}
		runtime.KeepAlive(k)
	}
}
