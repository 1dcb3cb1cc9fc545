package exec

import "slices"

// BaseEnv are the variables every command gets from the server's
// environment, when set: a command never sees the server's whole
// environment.
var BaseEnv = []string{"PATH", "HOME", "USER", "LANG", "TERM", "TMPDIR"}

// DefaultPath is PATH when the server has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Environ returns a command's environment as NAME=value pairs: the BaseEnv
// variables and then the passthrough names, each taken from getenv and left
// out when empty, except PATH, which defaults to DefaultPath.
func Environ(passthrough []string, getenv func(string) string) []string {
	names := slices.Clone(BaseEnv)
	for _, n := range passthrough {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	env := make([]string, 0, len(names))
	for _, n := range names {
		v := getenv(n)
		if n == "PATH" && v == "" {
			v = DefaultPath
		}
		if v != "" {
			env = append(env, n+"="+v)
		}
	}
	return env
}
