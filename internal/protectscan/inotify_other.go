//go:build !linux

package protectscan

import (
	"errors"
	"fmt"
)

// Linux's values (linux/inotify.h), never passed to a kernel here.
const (
	inAttrib     = 0x4
	inCreate     = 0x100
	inDelete     = 0x200
	inDeleteSelf = 0x400
	inDontFollow = 0x2000000
	inExclUnlink = 0x4000000
	inIgnored    = 0x8000
	inModify     = 0x2
	inMovedFrom  = 0x40
	inMovedTo    = 0x80
	inMoveSelf   = 0x800
	inOnlydir    = 0x1000000
	inQOverflow  = 0x4000
	inUnmount    = 0x2000
)

// inotifyEvent is struct inotify_event's fixed part.
type inotifyEvent struct {
	Wd                int32
	Mask, Cookie, Len uint32
}

const sizeofInotifyEvent = 16

func inotifyInit() (int, error) {
	return -1, fmt.Errorf("%w: keeping scans current needs Linux's inotify", errors.ErrUnsupported)
}

func inotifyAddWatch(int, string, uint32) (int, error) { return -1, errors.ErrUnsupported }

func queuedBytes(int) (int, error) { return 0, errors.ErrUnsupported }
