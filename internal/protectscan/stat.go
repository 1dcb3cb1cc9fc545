package protectscan

import "golang.org/x/sys/unix"

// devOf is st's device as Linux's stat gives it (darwin's is an int32).
func devOf(st *unix.Stat_t) uint64 {
	return uint64(st.Dev) //nolint:unconvert // an int32 on darwin
}
