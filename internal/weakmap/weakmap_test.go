package weakmap_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/internal/weakmap"
)

type key struct{ id int }

func TestMap(t *testing.T) {
	var m weakmap.Map[key, string]
	a, b := &key{1}, &key{1}
	v, loaded := m.LoadOrStore(a, "a")
	assert.Equal(t, "a", v)
	assert.False(t, loaded)
	v, loaded = m.LoadOrStore(a, "again")
	assert.Equal(t, "a", v, "the first value stays")
	assert.True(t, loaded)
	_, ok := m.Load(b)
	assert.False(t, ok, "keys are identities, not values")
	assert.Equal(t, 1, m.Len())
	runtime.KeepAlive(a)
}

func TestMapDropsCollectedKeys(t *testing.T) {
	var m weakmap.Map[key, int]
	func() {
		for i := range 10 {
			m.LoadOrStore(&key{i}, i)
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for m.Len() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	assert.Zero(t, m.Len(), "entries go with their keys")
}
