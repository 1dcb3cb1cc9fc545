package sandboxpolicy

import (
	"os"
	"sync"
)

// maxLinkTargets bounds the targets a LinkTargets remembers.
const maxLinkTargets = 4096

// LinkTargets remembers what the symlinks in the deny-read directories led
// to (LinkedDenial's targets), with each one's identity, for the life of
// the Service, shared by the command runner and the file fence: a target
// stays denied while the same file or directory is at its path, after the
// chain of links that led to it changed (`~/.ssh/id -> ~/dotfiles/current
// -> keys/id`: a command re-pointed `current`, or the delete tool removed
// it, and the key was read next: the attack reviews of issue 34). One
// store for both, filled by the fence when it is made, before any call (a
// store of each, filled at its own first search, let a session whose first
// call moved the link read the key through the other). Only links in the
// deny-read directories that existed then are followed, so a command
// cannot fill it. Safe for concurrent use; the zero value is ready.
type LinkTargets struct {
	mu sync.Mutex
	m  map[string]linkTarget
}

type linkTarget struct {
	fi  os.FileInfo
	why string
}

// LinkTargets returns the Service's store of the deny-read links' targets.
func (s *Service) LinkTargets() *LinkTargets { return &s.linkTargets }

// Add remembers target (a canonical path) as it is now, fi its Lstat,
// with why it is denied, while fewer than maxLinkTargets are remembered.
func (k *LinkTargets) Add(target string, fi os.FileInfo, why string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]linkTarget{}
	}
	if _, ok := k.m[target]; ok || len(k.m) < maxLinkTargets {
		k.m[target] = linkTarget{fi: fi, why: why}
	}
}

// Current calls fn with each remembered target that is still what it was
// (the same file or directory at its path, os.SameFile of an Lstat: no
// symlink put in its place), its Lstat and why, and forgets the others.
func (k *LinkTargets) Current(fn func(target string, fi os.FileInfo, why string)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for p, t := range k.m {
		fi, err := os.Lstat(p)
		if err != nil || !os.SameFile(fi, t.fi) {
			delete(k.m, p)
			continue
		}
		fn(p, fi, t.why)
	}
}
