package dirfd

import "golang.org/x/sys/unix"

// Dev is st's device number as Linux's stat gives it (darwin's is an
// int32).
func Dev(st *unix.Stat_t) uint64 {
	return uint64(st.Dev) //nolint:unconvert // an int32 on darwin
}

// Perm is st's permission bits with set-user-ID, set-group-ID and sticky
// (mode & 07777; darwin's mode is a uint16).
func Perm(st *unix.Stat_t) uint32 {
	return uint32(st.Mode) & 0o7777 //nolint:unconvert // a uint16 on darwin
}
