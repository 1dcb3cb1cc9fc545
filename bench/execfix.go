package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The exec round trip's fixtures (issue 34): workspaces of many entries and
// a temp root of many entries that another goroutine churns while it is
// measured.

// makeTree fills root (which must exist) with dirs directories of files
// empty files each, workers at a time, and returns how many entries it made
// (directories and files). what names the tree in the progress lines, one
// every 10 s while it runs.
func makeTree(ctx context.Context, root string, dirs, files int, what string) (int, error) {
	var made atomic.Int64
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	for range 4 {
		wg.Go(func() {
			for d := range next {
				if err := makeDir(filepath.Join(root, fmt.Sprintf("d%05d", d)), files, &made); err != nil {
					fail(err)
				}
			}
		})
	}
	began := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	total := dirs * (files + 1)
feed:
	for d := range dirs {
		select {
		case next <- d:
		case <-ctx.Done():
			break feed
		case <-tick.C:
			progress("exec round trip: %s: %s of %s entries made in %s", what, fmtInt(int(made.Load())), fmtInt(total), time.Since(began).Round(time.Second))
			next <- d
		}
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop {
			break
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return int(made.Load()), first
	}
	return int(made.Load()), ctx.Err()
}

// makeDir makes the directory dir and files empty files in it, counting
// each entry in made.
func makeDir(dir string, files int, made *atomic.Int64) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	made.Add(1)
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = syscall.Close(fd) }()
	for i := range files {
		f, err := syscall.Openat(fd, fmt.Sprintf("f%03d.txt", i), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		_ = syscall.Close(f)
		made.Add(1)
	}
	return nil
}

// churnPrefix begins the name of every entry the churn makes.
const churnPrefix = "churn-"

// churnKeep is how many repository-shaped directories (and as many files)
// the churn keeps alive at once: it removes the oldest past that.
const churnKeep = 16

// churner creates and removes repository-shaped directories (a directory
// holding a HEAD file, objects/ and refs/) and plain files in dir, in a
// loop, pausing pause between cycles, until stopped.
type churner struct {
	dir    string
	pause  time.Duration
	cancel context.CancelFunc
	done   chan struct{}
	cycles atomic.Int64
	busy   atomic.Int64 // removals that failed and were tried again later
	began  time.Time
	took   time.Duration
	err    error
}

// startChurn starts churning dir.
func startChurn(ctx context.Context, dir string, pause time.Duration) *churner {
	ctx, cancel := context.WithCancel(ctx)
	c := &churner{dir: dir, pause: pause, cancel: cancel, done: make(chan struct{}), began: time.Now()}
	go func() {
		defer close(c.done)
		c.err = c.loop(ctx)
	}()
	return c
}

// loop is the churn: each cycle makes one repository-shaped directory and
// one file, and removes the oldest of each past churnKeep; at the end it
// removes what it left.
func (c *churner) loop(ctx context.Context) error {
	var alive, stuck []string
	defer func() {
		for range 10 {
			alive = slices.DeleteFunc(append(alive, stuck...), func(p string) bool { return os.RemoveAll(p) == nil })
			stuck = nil
			if len(alive) == 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		progress("churn: could not remove %s", strings.Join(alive, " "))
	}()
	head := []byte("ref: refs/heads/main\n")
	for i := 0; ctx.Err() == nil; i++ {
		repo := filepath.Join(c.dir, fmt.Sprintf("%s%d.git", churnPrefix, i))
		file := filepath.Join(c.dir, fmt.Sprintf("%s%d.tmp", churnPrefix, i))
		if err := os.Mkdir(repo, 0o755); err != nil {
			return err
		}
		alive = append(alive, repo)
		if err := os.WriteFile(filepath.Join(repo, "HEAD"), head, 0o644); err != nil {
			return err
		}
		for _, d := range []string{"objects", "refs"} {
			if err := os.Mkdir(filepath.Join(repo, d), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(file, head, 0o644); err != nil {
			return err
		}
		alive = append(alive, file)
		for len(alive) > 2*churnKeep {
			// A removal can meet what harness makes meanwhile in a
			// repository it found (a placeholder, a mount point of its
			// sandbox): such an entry is tried again next cycle.
			if err := os.RemoveAll(alive[0]); err != nil {
				c.busy.Add(1)
				stuck = append(stuck, alive[0])
			}
			alive = alive[1:]
		}
		stuck = slices.DeleteFunc(stuck, func(p string) bool { return os.RemoveAll(p) == nil })
		if len(stuck) > 1000 {
			return fmt.Errorf("%d entries the churn cannot remove, among them %s", len(stuck), stuck[0])
		}
		c.cycles.Add(1)
		if c.pause > 0 {
			select {
			case <-time.After(c.pause):
			case <-ctx.Done():
			}
		}
	}
	return nil
}

// stop ends the churn, waits for it to clean up and returns its error.
func (c *churner) stop() error {
	c.cancel()
	<-c.done
	c.took = time.Since(c.began)
	return c.err
}

// rate is the churn's cycles per second.
func (c *churner) rate() float64 {
	if c.took <= 0 {
		return 0
	}
	return float64(c.cycles.Load()) / c.took.Seconds()
}
