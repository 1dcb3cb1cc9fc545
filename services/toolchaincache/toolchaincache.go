// Package toolchaincache names the package and build caches of the common
// toolchains (Go, npm, pip, uv, cargo, Maven, Gradle) as a command would
// find them, so that one switch (--toolchain-caches) can make them writable
// under workspace-write instead of one --writable-root each. It reads only
// the environment it is given: it runs no toolchain (so a value set with
// `go env -w` or an npmrc file is not seen).
package toolchaincache

import (
	"os"
	"path/filepath"
	"strings"
)

// Cache is one cache directory: Tool names it ("go build", "npm", ...),
// Path is absolute (not canonicalized: it may pass through a symlink).
type Cache struct {
	Tool string `json:"tool"`
	Path string `json:"path"`
}

// Candidates returns the cache directories that the environment env
// (NAME=value pairs, a command's environment: exec.Environ's shape) names,
// in a fixed order, whether they exist or not:
//
//   - go modules: $GOMODCACHE, else the first absolute $GOPATH entry's pkg/mod, else
//     $HOME/go/pkg/mod;
//   - go build: $GOCACHE (none when "off"), else $XDG_CACHE_HOME/go-build,
//     else $HOME/.cache/go-build;
//   - npm: $npm_config_cache (or $NPM_CONFIG_CACHE), else $HOME/.npm;
//   - pip: $PIP_CACHE_DIR, else $XDG_CACHE_HOME/pip, else $HOME/.cache/pip;
//   - uv: $UV_CACHE_DIR, else $XDG_CACHE_HOME/uv, else $HOME/.cache/uv;
//   - cargo registry and cargo git: registry and git beneath $CARGO_HOME,
//     else $HOME/.cargo (never its bin, whose programs the host runs);
//   - maven: $HOME/.m2/repository (never settings.xml beside it);
//   - gradle: $GRADLE_USER_HOME/caches, else $HOME/.gradle/caches (never
//     the init scripts and properties beside it).
//
// A value that is not an absolute path counts as unset; one that needs
// $HOME while HOME is unset or relative is left out.
func Candidates(env []string) []Cache {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && filepath.IsAbs(v) {
			vars[k] = filepath.Clean(v)
		}
	}
	home := vars["HOME"]
	// under joins elems beneath base, or "" when base is unset.
	under := func(base string, elems ...string) string {
		if base == "" {
			return ""
		}
		return filepath.Join(append([]string{base}, elems...)...)
	}
	first := func(paths ...string) string {
		for _, p := range paths {
			if p != "" {
				return p
			}
		}
		return ""
	}
	xdgCache := first(vars["XDG_CACHE_HOME"], under(home, ".cache"))
	gopath := ""
	for _, p := range filepath.SplitList(rawValue(env, "GOPATH")) {
		if filepath.IsAbs(p) {
			gopath = filepath.Clean(p)
			break
		}
	}
	gocache := first(vars["GOCACHE"], under(xdgCache, "go-build"))
	if rawValue(env, "GOCACHE") == "off" {
		gocache = ""
	}
	cargo := first(vars["CARGO_HOME"], under(home, ".cargo"))
	all := []Cache{
		{"go modules", first(vars["GOMODCACHE"], under(gopath, "pkg", "mod"), under(home, "go", "pkg", "mod"))},
		{"go build", gocache},
		{"npm", first(vars["npm_config_cache"], vars["NPM_CONFIG_CACHE"], under(home, ".npm"))},
		{"pip", first(vars["PIP_CACHE_DIR"], under(xdgCache, "pip"))},
		{"uv", first(vars["UV_CACHE_DIR"], under(xdgCache, "uv"))},
		{"cargo registry", under(cargo, "registry")},
		{"cargo git", under(cargo, "git")},
		{"maven", under(home, ".m2", "repository")},
		{"gradle", under(first(vars["GRADLE_USER_HOME"], under(home, ".gradle")), "caches")},
	}
	out := make([]Cache, 0, len(all))
	for _, c := range all {
		if c.Path != "" {
			out = append(out, c)
		}
	}
	return out
}

// rawValue returns the value of name in env as written, "" when absent.
func rawValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// Existing returns those of Candidates(env) that are existing directories
// (a symlink to one counts; the caller canonicalizes), in the same order.
func Existing(env []string) []Cache {
	var out []Cache
	for _, c := range Candidates(env) {
		if st, err := os.Stat(c.Path); err == nil && st.IsDir() {
			out = append(out, c)
		}
	}
	return out
}
