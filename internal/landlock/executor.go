package landlock

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// defaultThreadsPerSet bounds the mutations of one root set that run at
	// once. A durable mutation spends most of its time blocked in fsync, and
	// writes into one directory share the directory's fsync only when they
	// are in flight together (atomicwrite.DirSyncs), so the pool is sized
	// for eight concurrent writers, not for the cores (issue 15).
	defaultThreadsPerSet = 8
	// defaultMaxSets bounds the distinct root sets with threads at once (a set
	// per session workspace, in practice), so at most 8 x 32 restricted threads
	// exist.
	defaultMaxSets = 32
	// defaultIdleTimeout is how long a thread waits for work before it exits:
	// long enough to serve a burst of calls, short enough that a session gone
	// quiet holds no threads.
	defaultIdleTimeout = 30 * time.Second
)

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("landlock: executor closed")

// errGoexit is a call's result when its function called runtime.Goexit: the
// function did not finish and its thread is gone.
var errGoexit = errors.New("landlock: the confined function called runtime.Goexit")

// Config bounds an Executor. Zero fields take the defaults; negative ones are
// an error.
type Config struct {
	// ThreadsPerSet caps the threads serving one root set, so the calls on
	// one set that run at once (default 8).
	ThreadsPerSet int
	// MaxSets caps the distinct root sets holding threads (default 32). A
	// call on a new set evicts the least recently used idle set when the cap
	// is reached, or waits for one to become idle.
	MaxSets int
	// IdleTimeout is how long a thread waits for work before it exits
	// (default 30s); a set whose threads all exited is forgotten.
	IdleTimeout time.Duration
}

// Executor runs functions on threads restricted to writable roots. It is safe
// for concurrent use. New returns it; Close releases its threads.
type Executor struct {
	cfg     Config
	abi     int
	handled uint64

	mu      sync.Mutex
	sets    map[string]*set
	freed   chan struct{} // closed and replaced when a set loses its last user while waiters > 0
	waiters int           // Run calls waiting for a set slot
	users   int           // Run calls holding a set
	live    int           // worker goroutines started and not yet exited
	closed  bool
	drained chan struct{} // closed once closed and users == live == 0
}

// New returns an Executor for the running kernel's Landlock ABI, or an
// *UnavailableError when Landlock cannot confine this process, or an error
// naming an invalid Config field.
func New(cfg Config) (*Executor, error) {
	if cfg.ThreadsPerSet < 0 || cfg.MaxSets < 0 || cfg.IdleTimeout < 0 {
		return nil, fmt.Errorf("landlock: negative config %+v: %w", cfg, unix.EINVAL)
	}
	if cfg.ThreadsPerSet == 0 {
		cfg.ThreadsPerSet = defaultThreadsPerSet
	}
	if cfg.MaxSets == 0 {
		cfg.MaxSets = defaultMaxSets
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = defaultIdleTimeout
	}
	abi, err := ABI()
	if err != nil {
		return nil, err
	}
	return &Executor{
		cfg:     cfg,
		abi:     abi,
		handled: handledAccess(abi),
		sets:    map[string]*set{},
		freed:   make(chan struct{}),
		drained: make(chan struct{}),
	}, nil
}

// ABI returns the Landlock ABI the executor's domains are built for.
func (e *Executor) ABI() int { return e.abi }

// Run calls fn on an OS thread whose Landlock domain allows filesystem writes
// only beneath roots (clean absolute paths of directories; order and
// duplicates do not matter; none means no write anywhere) and returns fn's
// error. A write elsewhere fails in fn with EACCES, or EXDEV for a link or
// rename (see Denied). Reads are not restricted. Only fn's own goroutine is
// confined: goroutines fn starts are not. fn must not call Run: with every
// thread of its set busy, it would wait for itself. A panic in fn is recovered and
// returned as an error (wrapping the panic value when it is an error).
//
// ctx bounds the wait for a thread of the set (and for a set slot when
// Config.MaxSets sets are all busy); once fn runs, Run waits for it to return.
// Errors: ctx's error, ErrClosed, EINVAL for a root that is not a clean
// absolute path, and a *os.PathError or *os.SyscallError when a thread cannot
// be restricted (a root that is missing, not a directory or behind a symlink);
// in each of those cases fn did not run.
func (e *Executor) Run(ctx context.Context, roots []string, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	key, roots, err := rootSet(roots)
	if err != nil {
		return err
	}
	s, err := e.acquire(ctx, key, roots)
	if err != nil {
		return err
	}
	defer e.release(s)
	return e.submit(ctx, s, &job{fn: fn, done: make(chan error, 1)})
}

// Close stops accepting calls, waits for running calls to return, and ends
// every thread (the runtime terminates each as its goroutine exits, shortly
// after Close returns). It returns nil; calling it again does nothing.
func (e *Executor) Close() error {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		for key, s := range e.sets {
			close(s.quit)
			delete(e.sets, key)
		}
		e.checkDrained()
	}
	e.mu.Unlock()
	<-e.drained
	return nil
}

// rootSet validates roots and returns them sorted without duplicates, with
// the key naming the set.
func rootSet(roots []string) (string, []string, error) {
	for _, r := range roots {
		if !filepath.IsAbs(r) || filepath.Clean(r) != r || strings.ContainsRune(r, 0) {
			return "", nil, fmt.Errorf("landlock: writable root %q is not a clean absolute path: %w", r, unix.EINVAL)
		}
	}
	sorted := slices.Clone(roots)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	return strings.Join(sorted, "\x00"), sorted, nil
}
