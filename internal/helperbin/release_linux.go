package helperbin

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Release drops the embedded helper's pages from the process's resident
// memory once its sealed copy is made: about 4 MB of VmRSS that an idle
// server would otherwise hold for nothing (issue 36's idle memory). They
// are pages of the executable file that nothing writes, so MADV_DONTNEED
// only unmaps them; a later Program (harness policy, another runner's
// sealed copy) reads them from the file again, unchanged. Only the whole
// pages inside the image are dropped: the partial pages at its ends hold
// other variables. A failed madvise leaves the pages where they are.
func Release() {
	img := verified()
	if len(img) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(img)))
	lo := (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(img))) &^ (page - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(img[lo-start:hi-start], unix.MADV_DONTNEED)
}
