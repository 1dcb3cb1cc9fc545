package toolexec_test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execsandbox"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/guard"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolexec"
)

// Kinds of result a runtime case expects.
const (
	plain   = "plain"
	denied  = "file"
	network = "network"
	// proxyRefused is a network denial from the proxy's record (network deny
	// under bubblewrap): the host named, the allow_hosts hint.
	proxyRefused = "proxied"
)

// runtimeCase is one command run in the real runner. Its command and path
// hold placeholders ({OUT}, {WS}, {PY}, ...) the table test fills in; a
// case whose placeholders have no value (the runtime is missing) is
// skipped, saying which.
type runtimeCase struct {
	name, cmd string
	// want is plain, denied or network; path the path a denial names
	// (denied), which must not exist afterwards unless keep says it did
	// before; boundary what the detail must say it crosses.
	want, path, boundary string
	keep                 bool
	// workdir is relative to the workspace ("" for its root).
	workdir string
	// failOnly: the command must fail (a plain result that is a failure,
	// not a success that proves nothing).
	failOnly bool
}

// runtimes builds what the cases run, once per test: the tiny Go, Rust
// and Java programs (each a write, a create and a connect), and finds
// python3, node, curl, git, make, npm, pip's wheel and cargo.
type runtimes map[string]string

func findRuntimes(t *testing.T) runtimes {
	t.Helper()
	dir := t.TempDir()
	r := runtimes{}
	look := func(key, name string) {
		if p, err := osexec.LookPath(name); err == nil {
			r[key] = p
		}
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		r["PY"] = "/usr/bin/python3"
	} else {
		look("PY", "python3")
	}
	for key, name := range map[string]string{"NODE": "node", "CURL": "curl", "GIT": "git", "MAKE": "make", "NPM": "npm", "CARGO": "cargo", "BASH": "bash"} {
		look(key, name)
	}
	if py := r["PY"]; py != "" && osexec.Command(py, "-m", "pip", "--version").Run() == nil {
		if wheels, _ := filepath.Glob("/usr/share/python-wheels/pip-*.whl"); len(wheels) > 0 {
			r["PIPWHEEL"] = wheels[0]
		}
	}
	if goBin, err := osexec.LookPath("go"); err == nil {
		src := filepath.Join(dir, "goprobe")
		require.NoError(t, os.Mkdir(src, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module probe\n\ngo 1.22\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte(goProbe), 0o644))
		cmd := osexec.Command(goBin, "build", "-o", filepath.Join(dir, "goprobe-bin"), ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		r["GOPROBE"] = filepath.Join(dir, "goprobe-bin")
	}
	if rustc, err := osexec.LookPath("rustc"); err == nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "rs.rs"), []byte(rustProbe), 0o644))
		out, err := osexec.Command(rustc, "-o", filepath.Join(dir, "rsprobe"), filepath.Join(dir, "rs.rs")).CombinedOutput()
		require.NoError(t, err, string(out))
		r["RSPROBE"] = filepath.Join(dir, "rsprobe")
	}
	if javac, err := osexec.LookPath("javac"); err == nil {
		if java, err := osexec.LookPath("java"); err == nil {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "W.java"), []byte(javaProbe), 0o644))
			out, err := osexec.Command(javac, "-d", dir, filepath.Join(dir, "W.java")).CombinedOutput()
			require.NoError(t, err, string(out))
			r["JAVA"] = java + " -cp " + dir + " W"
		}
	}
	return r
}

const goProbe = `package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	var err error
	switch os.Args[1] {
	case "write":
		err = os.WriteFile(os.Args[2], []byte("x"), 0o644)
	case "mkdir":
		err = os.MkdirAll(os.Args[2], 0o755)
	case "dial":
		_, err = net.Dial("tcp", os.Args[2])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

const rustProbe = `fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a[1].as_str() {
        "write" => { std::fs::write(&a[2], b"x").unwrap(); }
        "create" => { if let Err(e) = std::fs::File::create(&a[2]) { eprintln!("Error: {}", e); std::process::exit(1); } }
        _ => { std::net::TcpStream::connect(&a[2]).unwrap(); }
    }
}
`

const javaProbe = `import java.nio.file.*;
public class W { public static void main(String[] a) throws Exception {
  if (a[0].equals("nio")) Files.writeString(Path.of(a[1]), "x");
  else if (a[0].equals("io")) new java.io.FileOutputStream(a[1]).close();
  else new java.net.Socket(a[1], 80).close();
}}
`

// denialWorld is a workspace (the only writable root: no temp roots) with
// a git repository in repo/, and a directory outside it under /var/tmp
// holding a file "existing".
type denialWorld struct {
	ws, out string
	pol     *sandboxpolicy.Service
	sess    *session.Session
}

func newDenialWorld(t *testing.T) *denialWorld {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	out, err := os.MkdirTemp("/var/tmp", "harness-denial-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(out) })
	out, err = filepath.EvalSymlinks(out)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, "existing"), []byte("kept\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "inside"), []byte("in\n"), 0o644))
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}, Homes: []string{}})
	require.NoError(t, err)
	return &denialWorld{ws: ws, out: out, pol: pol, sess: session.New("s", ws)}
}

func (w *denialWorld) tool(t *testing.T, cfg execsandbox.Config) *tool.Tool {
	t.Helper()
	r, err := execsandbox.New(cfg, exec.Config{Env: []string{"GOCACHE", "GOPATH", "CARGO_HOME", "RUSTUP_HOME"}}, w.pol)
	require.NoError(t, err)
	tl, err := toolexec.New(toolexec.Config{}, toolexec.Deps{Runner: r, Policy: w.pol})
	require.NoError(t, err)
	return tl.Exec()
}

// placeholder is {NAME} in a case's command or path.
var placeholder = regexp.MustCompile(`\{([A-Z]+)\}`)

// needs names what a placeholder stands for, for a skip's reason.
var needs = map[string]string{
	"PY": "python3", "NODE": "node", "CURL": "curl", "GIT": "git", "MAKE": "make", "NPM": "npm", "CARGO": "cargo",
	"BASH": "bash", "PIPWHEEL": "pip (and its wheel in /usr/share/python-wheels)", "GOPROBE": "go", "RSPROBE": "rustc",
	"JAVA": "java and javac",
}

// fill replaces the placeholders of s; missing names what is not installed.
func (w *denialWorld) fill(s string, rt runtimes) (filled, missing string) {
	vals := map[string]string{"OUT": w.out, "WS": w.ws}
	for k, v := range rt {
		vals[k] = v
	}
	filled = placeholder.ReplaceAllStringFunc(s, func(m string) string {
		key := m[1 : len(m)-1]
		v, ok := vals[key]
		if !ok && missing == "" {
			missing = needs[key]
		}
		return v
	})
	return filled, missing
}

func (w *denialWorld) check(t *testing.T, tl *tool.Tool, rt runtimes, c runtimeCase) {
	t.Helper()
	cmd, missing := w.fill(c.cmd, rt)
	if missing != "" {
		t.Skipf("%s is not installed here", missing)
	}
	path, _ := w.fill(c.path, rt)
	var before string
	if c.keep {
		before = snapshot(t, path)
	}
	res := call(t, tl, w.sess, map[string]any{"command": cmd, "workdir": c.workdir, "timeout_ms": 120000})
	v, ok := res.Value.(toolexec.Value)
	require.True(t, ok, res.Text)
	mode := sandbox.WorkspaceWrite
	switch c.want {
	case denied:
		assert.NotEqual(t, 0, v.ExitCode, res.Text)
		assert.EqualValues(t, fs.CodeSandboxDenied, res.Code, res.Text)
		assert.True(t, strings.HasPrefix(res.Text, "Error: "+sandbox.DenialMarker(mode)+"\n(inferred: "), res.Text)
		assert.Contains(t, res.Text, strconv.Quote(path), res.Text)
		assert.Contains(t, res.Text, c.boundary, res.Text)
		assert.Contains(t, res.Text, sandbox.EscalationHint(sandbox.SubjectCommand))
		if c.keep {
			assert.Equal(t, before, snapshot(t, path), "the refused path is unchanged on disk")
		} else {
			_, err := os.Lstat(path)
			assert.True(t, os.IsNotExist(err), "%s was created: %v", path, err)
		}
	case network:
		assert.NotEqual(t, 0, v.ExitCode, res.Text)
		assert.EqualValues(t, guard.CodeNetworkDenied, res.Code, res.Text)
		assert.True(t, strings.HasPrefix(res.Text, "Error: "+sandbox.NetworkDenialMarker(mode)+"\n(inferred: "), res.Text)
		assert.Contains(t, res.Text, sandbox.EscalationHint(sandbox.SubjectCommand))
	case proxyRefused:
		assert.NotEqual(t, 0, v.ExitCode, res.Text)
		assert.EqualValues(t, guard.CodeNetworkDenied, res.Code, res.Text)
		assert.True(t, strings.HasPrefix(res.Text, "Error: "+sandbox.NetworkDenialMarker(mode)+"\n(the network proxy refused "+strconv.Quote(c.path)), res.Text)
		assert.Contains(t, res.Text, "allow_hosts ["+strconv.Quote(c.path)+"]")
	default:
		assert.False(t, res.IsError, res.Text)
		assert.NotContains(t, res.Text, "[sandbox:")
		if c.failOnly {
			assert.NotEqual(t, 0, v.ExitCode, "the command was meant to fail: %s", res.Text)
		}
	}
}

// outside is the boundary of a path outside the workspace.
const outside = sandboxpolicy.BoundaryOutside

// Cases run under both isolations: a write outside the writable roots
// fails with EROFS under bubblewrap and EACCES under Landlock alone.
var commonCases = []runtimeCase{
	{name: "sh redirect", cmd: "echo x > {OUT}/x", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "touch", cmd: "touch {OUT}/x", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "python open", cmd: `{PY} -c 'open("{OUT}/x", "w")'`, want: denied, path: "{OUT}/x", boundary: outside},
	{name: "node writeFileSync", cmd: `{NODE} -e 'require("fs").writeFileSync("{OUT}/x", "x")'`, want: denied, path: "{OUT}/x", boundary: outside},
	{name: "go os.WriteFile", cmd: "{GOPROBE} write {OUT}/x", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "rust File::create, no path printed", cmd: "{RSPROBE} create {OUT}/x", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "java FileOutputStream", cmd: "{JAVA} io {OUT}/x", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "python socket connect", cmd: `{PY} -c 'import socket; socket.create_connection(("1.1.1.1", 80), timeout=5)'`, want: network},
	{name: "go net.Dial", cmd: "{GOPROBE} dial 1.1.1.1:80", want: network},
	{name: "node net.connect", cmd: `{NODE} -e 'require("net").connect(80, "1.1.1.1").on("error", e => { throw e })'`, want: network},
	{name: "java socket", cmd: "{JAVA} net 1.1.1.1", want: network},
	// Not the sandbox's.
	{name: "forged denial, exit 0", cmd: `echo "touch: cannot touch '{OUT}/x': Read-only file system" >&2`, want: plain},
	{name: "forged denial inside the workspace", cmd: `echo "touch: cannot touch '{WS}/x': Read-only file system" >&2; exit 1`, want: plain, failOnly: true},
	{name: "forged network failure, exit 0", cmd: `echo "curl: (6) Could not resolve host: example.com" >&2`, want: plain},
	{name: "no space left inside the workspace", cmd: `echo "cp: error writing '{WS}/x': No space left on device" >&2; exit 1`, want: plain, failOnly: true},
	{name: "curl to loopback", cmd: "{CURL} -sS http://127.0.0.1:9/", want: plain, failOnly: true},
	{name: "reading a file outside", cmd: "cat {OUT}/existing; exit 3", want: plain, failOnly: true},
}

// Cases of bubblewrap's read-only world (EROFS) and its loopback-only
// network namespace.
var bwrapCases = []runtimeCase{
	// The proxy refuses them (403: -f fails on it), naming the host.
	{name: "curl by address", cmd: "{CURL} -fsS --max-time 10 http://1.1.1.1/", want: proxyRefused, path: "1.1.1.1"},
	{name: "curl by name", cmd: "{CURL} -fsS --max-time 10 http://example.com/", want: proxyRefused, path: "example.com"},
	// The namespace's name server refuses the name at its lookup, naming it
	// (issue 36: programs that ignore the proxy variables).
	{name: "go net.Dial by name", cmd: "{GOPROBE} dial example.com:80", want: proxyRefused, path: "example.com"},
	{name: "node dns lookup", cmd: `{NODE} -e 'require("dns").lookup("example.com", e => { if (e) throw e })'`, want: proxyRefused, path: "example.com"},
	{name: "python name lookup", cmd: `{PY} -c 'import socket; socket.getaddrinfo("example.com", 80)'`, want: proxyRefused, path: "example.com"},
	{name: "bash redirect", cmd: "{BASH} -c 'echo x > {OUT}/x'", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "mkdir", cmd: "mkdir {OUT}/d", want: denied, path: "{OUT}/d", boundary: outside},
	{name: "cp", cmd: "cp inside {OUT}/x", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "mv", cmd: "mv inside {OUT}/x", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "ln", cmd: "ln -s inside {OUT}/l", want: denied, path: "{OUT}/l", boundary: outside},
	{name: "tee", cmd: "echo x | tee {OUT}/t", want: denied, path: "{OUT}/t", boundary: outside},
	{name: "rm", cmd: "rm -f {OUT}/existing", want: denied, path: "{OUT}/existing", boundary: outside, keep: true},
	{name: "go MkdirAll", cmd: "{GOPROBE} mkdir {OUT}/a/b", want: denied, path: "{OUT}/a", boundary: outside},
	{name: "rust unwrap panic", cmd: "{RSPROBE} write {OUT}/x", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "java nio", cmd: "{JAVA} nio {OUT}/x", want: denied, path: "{OUT}/x", boundary: outside},
	{name: "make recipe", cmd: `printf 'all:\n\techo x > {OUT}/m\n' > Makefile && {MAKE}`, want: denied, path: "{OUT}/m", boundary: outside},
	{name: "make file function", cmd: `printf '$(file > {OUT}/f,x)\nall:\n\t@true\n' > M2 && {MAKE} -f M2`, want: denied, path: "{OUT}/f", boundary: outside},
	{name: "git init", cmd: "{GIT} init {OUT}/repo", want: denied, path: "{OUT}/repo", boundary: outside},
	{name: "git config", cmd: "{GIT} config user.name y", workdir: "repo", want: denied, path: "{WS}/repo/.git/config", boundary: sandboxpolicy.BoundaryProtected, keep: true},
	{name: "npm init", cmd: "cd {OUT} && {NPM} init -y", want: denied, path: "{OUT}/package.json", boundary: outside},
	{name: "pip install --target", cmd: "{PY} -m pip install --no-index --no-deps --target {OUT}/t {PIPWHEEL}", want: denied, path: "{OUT}/t", boundary: outside},
	{name: "cargo new", cmd: "{CARGO} new --vcs none {OUT}/p", want: denied, path: "{OUT}/p", boundary: outside},
	{name: "node fetch", cmd: `{NODE} -e 'fetch("http://1.1.1.1/").catch(e => { console.error(e); process.exit(1) })'`, want: network},
	{name: "rust connect", cmd: "{RSPROBE} dial 1.1.1.1:80", want: network},
	{name: "a Unix socket of its own under --unix-sockets deny", cmd: `{PY} -c 'import socket; socket.socket(socket.AF_UNIX); print("ok")'`, want: plain},
	{name: "a POSIX semaphore in the fresh /dev/shm", cmd: `{PY} -c 'import multiprocessing; multiprocessing.Semaphore(); print("ok")'`, want: plain},
}

// Cases of the Landlock isolation: EACCES, and socket(2) refused EPERM.
var landlockCases = []runtimeCase{
	// No namespace, no name server: the lookup fails as the host's does.
	{name: "go net.Dial by name", cmd: "{GOPROBE} dial example.com:80", want: network},
	{name: "node dns lookup", cmd: `{NODE} -e 'require("dns").lookup("example.com", e => { if (e) throw e })'`, want: network},
	{name: "python name lookup", cmd: `{PY} -c 'import socket; socket.getaddrinfo("example.com", 80)'`, want: network},
	// No proxy: no route, no resolver.
	{name: "curl by address", cmd: "{CURL} -sS --max-time 10 http://1.1.1.1/", want: network},
	{name: "curl by name", cmd: "{CURL} -sS --max-time 10 http://example.com/", want: network},
	{name: "a POSIX semaphore in /dev/shm", cmd: `{PY} -c 'import multiprocessing; multiprocessing.Semaphore()'`, want: denied, path: "/dev/shm", boundary: outside, keep: true},
	{name: "a Unix socket under --unix-sockets deny", cmd: `{PY} -c 'import socket; socket.socket(socket.AF_UNIX)'`, want: network},
	{name: "node writeFile promise", cmd: `{NODE} -e 'require("fs").promises.writeFile("{OUT}/x", "x").catch(e => { console.error(e); process.exit(1) })'`, want: denied, path: "{OUT}/x", boundary: outside},
}

func TestRuntimeDenialsUnderBubblewrap(t *testing.T) {
	requireLandlock(t)
	w := newDenialWorld(t)
	gitRepo(t, w)
	tl := w.tool(t, execsandbox.Config{})
	if probe := call(t, tl, w.sess, map[string]any{"command": "true"}); probe.IsError {
		t.Skipf("bubblewrap cannot run commands here: %s", probe.Text)
	}
	rt := findRuntimes(t)
	for _, c := range append(append(append([]runtimeCase{}, commonCases...), bwrapCases...), notWritableCases(t, w, false)...) {
		t.Run(c.name, func(t *testing.T) { w.check(t, tl, rt, c) })
	}
}

func TestRuntimeDenialsUnderLandlock(t *testing.T) {
	requireLandlock(t)
	w := newDenialWorld(t)
	tl := w.tool(t, execsandbox.Config{Isolation: execsandbox.IsolationLandlock})
	rt := findRuntimes(t)
	for _, c := range append(append(append([]runtimeCase{}, commonCases...), landlockCases...), notWritableCases(t, w, os.Geteuid() == 0)...) {
		t.Run(c.name, func(t *testing.T) { w.check(t, tl, rt, c) })
	}
}

// gitRepo makes w's workspace hold a git repository in repo/, made before
// any command runs (so its .git is protected).
func gitRepo(t *testing.T, w *denialWorld) {
	t.Helper()
	git, err := osexec.LookPath("git")
	if err != nil {
		return // the git cases skip
	}
	out, err := osexec.Command(git, "init", "-q", filepath.Join(w.ws, "repo")).CombinedOutput()
	require.NoError(t, err, string(out))
}

// notWritableCases are refusals the command would meet without the
// sandbox, so not the sandbox's: a write into a directory the command's
// user cannot write, a read of a file of another user (mode 0600), a write
// to a read-only file it owns inside the workspace. A command that keeps
// root's capabilities (the Landlock isolation under a root server) is
// refused none of them: capable gives none.
func notWritableCases(t *testing.T, w *denialWorld, capable bool) []runtimeCase {
	t.Helper()
	if capable {
		return nil
	}
	ro := filepath.Join(w.ws, "ro.txt")
	require.NoError(t, os.WriteFile(ro, []byte("ro\n"), 0o444))
	cases := []runtimeCase{
		{name: "a read-only file the user owns, in the workspace", cmd: "echo y > ro.txt", want: plain, failOnly: true},
	}
	if os.Geteuid() == 0 {
		// Commands run as root without capabilities: another owner's
		// modes hold.
		locked := filepath.Join(w.out, "locked")
		require.NoError(t, os.Mkdir(locked, 0o755))
		require.NoError(t, os.Chown(locked, 65534, 65534))
		secret := filepath.Join(w.out, "secret")
		require.NoError(t, os.WriteFile(secret, []byte("s\n"), 0o600))
		require.NoError(t, os.Chown(secret, 65534, 65534))
		return append(cases,
			runtimeCase{name: "a directory of another user", cmd: "touch " + locked + "/x", want: plain, failOnly: true},
			runtimeCase{name: "a 0600 file of another user", cmd: "cat " + secret, want: plain, failOnly: true},
		)
	}
	cases = append(cases, runtimeCase{name: "a directory of root", cmd: "touch /etc/harness-denial-test", want: plain, failOnly: true})
	if f, err := os.Open("/etc/shadow"); err == nil {
		_ = f.Close()
	} else {
		cases = append(cases, runtimeCase{name: "a file of root the user cannot read", cmd: "cat /etc/shadow", want: plain, failOnly: true})
	}
	return cases
}

// snapshot returns what is at path: a file's bytes, a directory's names.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		require.NoError(t, err)
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		return strings.Join(names, "\n")
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
