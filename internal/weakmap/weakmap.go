// Package weakmap is a concurrent map keyed by object identity that does not
// keep its keys alive: an entry goes when its key is garbage collected. The
// harness keys per-session state with it (read-before-write records, pinned
// session roots), so a session's state lives exactly as long as the session.
package weakmap

import (
	"runtime"
	"sync"
	"weak"
)

// Map maps *K to V. The zero value is ready to use.
type Map[K, V any] struct {
	mu sync.Mutex
	m  map[weak.Pointer[K]]V
}

// Load returns the value of key.
func (m *Map[K, V]) Load(key *K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[weak.Make(key)]
	return v, ok
}

// LoadOrStore returns the value of key, storing and returning v when there is
// none; loaded reports whether it was already there.
func (m *Map[K, V]) LoadOrStore(key *K, v V) (actual V, loaded bool) {
	wk := weak.Make(key)
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.m[wk]; ok {
		return cur, true
	}
	if m.m == nil {
		m.m = map[weak.Pointer[K]]V{}
	}
	m.m[wk] = v
	runtime.AddCleanup(key, m.forget, wk)
	return v, false
}

// Len returns the number of live entries.
func (m *Map[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

func (m *Map[K, V]) forget(wk weak.Pointer[K]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, wk)
}
