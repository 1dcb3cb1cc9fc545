package execsandbox

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// homeRoots says which directories a shell or git on the host may read
// start-up files from (sandbox.HostRun.Home): the command's home (its
// HOME), the policy's homes (the server user's and a root server's
// workspace owner's), $ZDOTDIR (zsh's) and every account's home in
// /etc/passwd, each as given and canonical. A root that is none of them
// gets no placeholder for a missing start-up file (issue 34: nothing in
// the user's tree where nothing would read it).
func homeRoots(command string, policy []string) map[string]bool {
	out := maps.Clone(accountHomes.get())
	if out == nil {
		out = map[string]bool{}
	}
	for _, h := range append([]string{command, os.Getenv("ZDOTDIR")}, policy...) {
		if filepath.IsAbs(h) && filepath.Clean(h) != "/" && !out[filepath.Clean(h)] {
			out[filepath.Clean(h)] = true
			if c, err := filepath.EvalSymlinks(h); err == nil {
				out[c] = true
			}
		}
	}
	return out
}

// accountHomes caches the homes of /etc/passwd, read again when the file
// changes (its identity, size or modification time).
var accountHomes passwdHomes

type passwdHomes struct {
	mu    sync.Mutex
	stamp [4]int64
	homes map[string]bool
}

// get returns the account homes, current with /etc/passwd; the map is
// shared, not to be written.
func (p *passwdHomes) get() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	var st syscall.Stat_t
	if syscall.Stat("/etc/passwd", &st) != nil {
		p.homes, p.stamp = nil, [4]int64{}
		return nil
	}
	stamp := [4]int64{int64(st.Ino), st.Size, st.Mtim.Sec, st.Mtim.Nsec}
	if p.homes != nil && stamp == p.stamp {
		return p.homes
	}
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return nil
	}
	homes := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Split(sc.Bytes(), []byte(":"))
		if len(f) < 7 {
			continue
		}
		h := string(f[5])
		if !filepath.IsAbs(h) || filepath.Clean(h) == "/" {
			continue
		}
		homes[filepath.Clean(h)] = true
		if c, err := filepath.EvalSymlinks(h); err == nil {
			homes[c] = true
		}
	}
	p.homes, p.stamp = homes, stamp
	return homes
}
