package sandboxpolicy

import (
	"bufio"
	"bytes"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dsh-go/harness/internal/dirfd"
)

// isHome reports whether dir (clean, canonical) is a home directory, where
// a shell reads the start-up files of sandbox.HostRun.Home: one of homes
// (the server's $HOME and its account's, a root server's workspace
// owner's), the home the user database gives any account (/etc/passwd: a
// server started with another $HOME, `sudo -E`, still serves root's own
// home as a home), the home of the account named like dir's last element
// (user.Lookup: an account of another name service, cached per directory),
// or the server's $ZDOTDIR (zsh's start-up files); by path, or by identity
// (a bind mount of one). The attack review of issue 34 wrote
// /root/.bash_profile from a root server whose $HOME was another user's.
func isHome(dir string, homes []string) bool {
	accounts, accountInfos := accountHomes()
	z := zdotdir()
	if slices.Contains(homes, dir) || slices.Contains(accounts, dir) || (z != "" && z == dir) {
		return true
	}
	// The same directory by another path (a bind mount of /root: the
	// second review): by identity.
	if fi, err := os.Stat(dir); err == nil {
		for _, h := range append(slices.Clone(homes), z) {
			if hi, err := os.Stat(h); h != "" && err == nil && os.SameFile(fi, hi) {
				return true
			}
		}
		for _, hi := range accountInfos {
			if os.SameFile(fi, hi) {
				return true
			}
		}
	}
	if v, ok := lookedUp.Load(dir); ok {
		return v.(bool)
	}
	home := false
	if u, err := user.Lookup(filepath.Base(dir)); err == nil && filepath.IsAbs(u.HomeDir) {
		home = filepath.Clean(CanonicalPath(u.HomeDir)) == dir
	}
	lookedUp.Store(dir, home)
	return home
}

// lookedUp keeps isHome's user.Lookup answers by directory.
var lookedUp sync.Map

// passwd is the user database file accountHomes reads.
const passwd = "/etc/passwd"

// zdotdir returns the server's $ZDOTDIR (where zsh reads its start-up
// files), canonical, when it is absolute and not `/`; else "".
func zdotdir() string {
	z := os.Getenv("ZDOTDIR")
	if !filepath.IsAbs(z) || filepath.Clean(z) == "/" {
		return ""
	}
	return filepath.Clean(CanonicalPath(z))
}

// accountHomes returns the home directories /etc/passwd gives its
// accounts, canonical, but `/`, and the stat of each that exists; read
// again when the file changed.
func accountHomes() ([]string, []os.FileInfo) {
	st, err := os.Stat(passwd)
	if err != nil {
		return nil, nil
	}
	homesCache.mu.Lock()
	defer homesCache.mu.Unlock()
	if homesCache.read && homesCache.mtime == st.ModTime().UnixNano() && homesCache.size == st.Size() {
		return homesCache.homes, homesCache.infos
	}
	data, err := os.ReadFile(passwd)
	if err != nil {
		return nil, nil
	}
	var homes []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 7 || !filepath.IsAbs(fields[5]) || filepath.Clean(fields[5]) == "/" {
			continue
		}
		if h := filepath.Clean(CanonicalPath(fields[5])); !slices.Contains(homes, h) {
			homes = append(homes, h)
		}
	}
	var infos []os.FileInfo
	for _, h := range homes {
		if fi, err := os.Stat(h); err == nil {
			infos = append(infos, fi)
		}
	}
	homesCache.homes, homesCache.infos, homesCache.mtime, homesCache.size, homesCache.read = homes, infos, st.ModTime().UnixNano(), st.Size(), true
	return homes, infos
}

// homesCache is accountHomes' last reading.
var homesCache struct {
	mu          sync.Mutex
	read        bool
	mtime, size int64
	homes       []string
	infos       []os.FileInfo
}

// LinkedDenial reports whether target, the canonical path a symlink in a
// deny-read directory leads to, is denied with it (the runner masks it, the
// file tools refuse it): when it lies beneath one of homes (a key kept in a
// dotfiles tree and linked into ~/.ssh) or beneath one of roots, and is
// neither `/`, nor one of homes, nor holds one of roots or homes. Not
// elsewhere: a link an agent made in a deny-read directory it created
// (`~/.kube` in a home workspace) to /usr denied every command's shell
// (the attack review of issue 34).
func LinkedDenial(target string, roots, homes []string) bool {
	if target == "/" || slices.Contains(homes, target) {
		return false
	}
	holds := func(d string) bool { return dirfd.Beneath(target, d) }
	if slices.ContainsFunc(roots, holds) || slices.ContainsFunc(homes, holds) {
		return false
	}
	beneath := func(d string) bool { return dirfd.Beneath(d, target) }
	return slices.ContainsFunc(homes, beneath) || slices.ContainsFunc(roots, beneath)
}
