package toolexec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/execlocal"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/toolchaincache"
)

// The confinements the fixtures were captured under.
var (
	// bwrapConf: bubblewrap's read-only world, no network, no Unix sockets.
	bwrapConf = exec.Confinement{ReadOnlyMounts: true}
	// landlockConf: Landlock alone.
	landlockConf = exec.Confinement{}
	// unixDenied: the network allowed, Unix sockets not.
	unixDenied = exec.Confinement{Network: true, ReadOnlyMounts: true}
	// namedOnly: the network allowed, Unix sockets only to a named one
	// (socket(AF_UNIX) is not refused).
	namedOnly = exec.Confinement{Network: true, UnixSocketPaths: []string{"/run/agent.sock"}, ReadOnlyMounts: true}
	// networkAllowed: both allowed.
	networkAllowed = exec.Confinement{Network: true, UnixSockets: true, ReadOnlyMounts: true}
)

// fixture is a real message, captured by running the runtime in the real
// runner (services/execsandbox) with a write outside the writable roots or
// a connection under --network deny, and what the inference must make of
// it. {OUT} is a directory outside the workspace, {WS} the workspace.
type fixture struct {
	name string
	// vcs is the policy's --vcs setting; "" is the default, commit.
	vcs     sandbox.VCS
	conf    exec.Confinement
	command string
	stderr  string
	// want is "file", "network" or "" (not the sandbox's); path the path a
	// file denial names, boundary what it crosses.
	want, path, boundary string
	// capable runs the command as a user whose capabilities pass every
	// file mode.
	capable bool
}

const outsideB = sandboxpolicy.BoundaryOutside

var fixtures = []fixture{
	// Writes outside under bubblewrap: EROFS.
	{name: "touch", conf: bwrapConf, stderr: "touch: cannot touch '{OUT}/x': Read-only file system\n", want: "file", path: "{OUT}/x"},
	{name: "sh redirect", conf: bwrapConf, stderr: "sh: 1: cannot create {OUT}/x: Read-only file system\n", want: "file", path: "{OUT}/x"},
	{name: "bash redirect", conf: bwrapConf, stderr: "bash: line 1: {OUT}/x: Read-only file system\n", want: "file", path: "{OUT}/x"},
	{name: "mkdir", conf: bwrapConf, stderr: "mkdir: cannot create directory ‘{OUT}/d’: Read-only file system\n", want: "file", path: "{OUT}/d"},
	{name: "cp", conf: bwrapConf, stderr: "cp: cannot create regular file '{OUT}/x': Read-only file system\n", want: "file", path: "{OUT}/x"},
	{name: "mv across mounts", conf: bwrapConf, stderr: "mv: inter-device move failed: '{WS}/m' to '{OUT}/m'; unable to remove target: Read-only file system\n", want: "file", path: "{OUT}/m"},
	{name: "rm", conf: bwrapConf, stderr: "rm: cannot remove '{OUT}/existing': Read-only file system\n", want: "file", path: "{OUT}/existing"},
	{name: "ln", conf: bwrapConf, stderr: "ln: failed to create symbolic link '{OUT}/l': Read-only file system\n", want: "file", path: "{OUT}/l"},
	{name: "tee", conf: bwrapConf, stderr: "tee: {OUT}/t: Read-only file system\n", want: "file", path: "{OUT}/t"},
	{name: "python open", conf: bwrapConf, stderr: "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nOSError: [Errno 30] Read-only file system: '{OUT}/x'\n", want: "file", path: "{OUT}/x"},
	{name: "node writeFileSync", conf: bwrapConf, stderr: "node:fs:2380\n    return binding.writeFileUtf8(\n                   ^\n\nError: EROFS: read-only file system, open '{OUT}/x'\n    at Object.writeFileSync (node:fs:2380:20)\n    at [eval]:1:15\n    at runScriptInThisContext (node:internal/vm:209:10)\n    at node:internal/process/execution:118:14\n    at [eval]-wrapper:6:24\n    at runScript (node:internal/process/execution:101:62)\n    at evalScript (node:internal/process/execution:133:3)\n    at node:internal/main/eval_string:51:3 {\n  errno: -30,\n  code: 'EROFS',\n  syscall: 'open',\n  path: '{OUT}/x'\n}\n\nNode.js v20.20.2\n", want: "file", path: "{OUT}/x"},
	{name: "go os.WriteFile", conf: bwrapConf, stderr: "open {OUT}/x: read-only file system\n", want: "file", path: "{OUT}/x"},
	{name: "go MkdirAll", conf: bwrapConf, stderr: "mkdir {OUT}/a: read-only file system\n", want: "file", path: "{OUT}/a"},
	{name: "go panic", conf: bwrapConf, stderr: "panic: open {OUT}/x: read-only file system\n\ngoroutine 1 [running]:\nmain.main()\n\t/var/tmp/denial-scratch/main.go:29 +0x253\n", want: "file", path: "{OUT}/x"},
	{name: "rust unwrap, no path printed", conf: bwrapConf, command: "/var/tmp/denial-scratch/rsprobe write {OUT}/x", stderr: "\nthread 'main' (7) panicked at rs.rs:5:50:\ncalled `Result::unwrap()` on an `Err` value: Os { code: 30, kind: ReadOnlyFilesystem, message: \"Read-only file system\" }\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n", want: "file", path: "{OUT}/x"},
	{name: "rust Display, no path printed", conf: bwrapConf, command: "./rsprobe create {OUT}/x", stderr: "Error: Read-only file system (os error 30)\n", want: "file", path: "{OUT}/x"},
	{name: "java nio", conf: bwrapConf, stderr: "Exception in thread \"main\" java.nio.file.FileSystemException: {OUT}/x: Read-only file system\n\tat java.base/sun.nio.fs.UnixException.translateToIOException(UnixException.java:100)\n\tat W.main(W.java:3)\n", want: "file", path: "{OUT}/x"},
	{name: "java io", conf: bwrapConf, stderr: "Exception in thread \"main\" java.io.FileNotFoundException: {OUT}/x (Read-only file system)\n\tat java.base/java.io.FileOutputStream.open0(Native Method)\n\tat W.main(W.java:4)\n", want: "file", path: "{OUT}/x"},
	{name: "make recipe", conf: bwrapConf, stderr: "/bin/sh: 1: cannot create {OUT}/m: Read-only file system\nmake: *** [Makefile:2: all] Error 2\n", want: "file", path: "{OUT}/m"},
	{name: "make file function", conf: bwrapConf, stderr: "M2:1: *** open: {OUT}/f: Read-only file system.  Stop.\n", want: "file", path: "{OUT}/f"},
	{name: "git init outside", conf: bwrapConf, stderr: "fatal: cannot mkdir {OUT}/repo: Read-only file system\n", want: "file", path: "{OUT}/repo"},
	{name: "git init of the workspace, copying a template", vcs: sandbox.VCSReadOnly, conf: bwrapConf, stderr: "fatal: cannot copy '/usr/share/git-core/templates/description' to '{WS}/.git/description': Read-only file system\n", want: "file", path: "{WS}/.git/description", boundary: sandboxpolicy.BoundaryProtected},
	{name: "git commit with .git read-only", vcs: sandbox.VCSReadOnly, conf: bwrapConf, stderr: "fatal: Unable to create '{WS}/repo/.git/index.lock': Read-only file system\n", want: "file", path: "{WS}/repo/.git/index.lock", boundary: sandboxpolicy.BoundaryProtected},
	{name: "git config", conf: bwrapConf, stderr: "error: could not lock config file .git/config: Read-only file system\n", want: "file", path: "{WS}/.git/config", boundary: sandboxpolicy.BoundaryProtected},
	{name: "git config under --vcs commit, renaming its lock onto the bound config", conf: bwrapConf, stderr: "error: could not write config file {WS}/.git/config: Device or resource busy\n", want: "file", path: "{WS}/.git/config", boundary: sandboxpolicy.BoundaryProtected},
	{name: "a busy path that is not protected", conf: bwrapConf, stderr: "rm: cannot remove '{WS}/mnt': Device or resource busy\n"},
	{name: "npm init", conf: bwrapConf, command: "cd {OUT} && npm init -y", stderr: "npm error code EROFS\nnpm error syscall open\nnpm error path {OUT}/package.json\nnpm error errno -30\nnpm error rofs EROFS: read-only file system, open '{OUT}/package.json'\nnpm error rofs Often virtualized file systems, or other file systems that don't support symlinks, give this error.\nnpm error Log files were not written due to an error writing to the directory: /root/.npm/_logs\nnpm error You can rerun the command with `--loglevel=verbose` to see the logs in your terminal\n", want: "file", path: "{OUT}/package.json"},
	{name: "pip install --target", conf: bwrapConf, stderr: "ERROR: Exception:\nTraceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/pip/_internal/utils/misc.py\", line 106, in ensure_dir\n    os.makedirs(path)\n  File \"<frozen os>\", line 225, in makedirs\nOSError: [Errno 30] Read-only file system: '{OUT}/t'\n", want: "file", path: "{OUT}/t"},
	{name: "cargo new", conf: bwrapConf, stderr: "    Creating binary (application) `p` package\nerror: failed to create package `p` at `{OUT}/p`\n\nCaused by:\n  failed to create directory `{OUT}/p`\n\nCaused by:\n  Read-only file system (os error 30)\n", want: "file", path: "{OUT}/p"},
	{name: "cargo init", conf: bwrapConf, stderr: "    Creating binary (application) package\nerror: failed to create package `o` at `{OUT}/.`\n\nCaused by:\n  failed to write `{OUT}/Cargo.toml`\n\nCaused by:\n  Read-only file system (os error 30)\n", want: "file", path: "{OUT}/Cargo.toml"},

	// Writes outside under Landlock alone: EACCES.
	{name: "touch, Landlock", conf: landlockConf, stderr: "touch: cannot touch '{OUT}/x': Permission denied\n", want: "file", path: "{OUT}/x"},
	{name: "python, Landlock", conf: landlockConf, stderr: "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nPermissionError: [Errno 13] Permission denied: '{OUT}/x'\n", want: "file", path: "{OUT}/x"},
	{name: "go, Landlock", conf: landlockConf, stderr: "open {OUT}/x: permission denied\n", want: "file", path: "{OUT}/x"},
	{name: "node, Landlock", conf: landlockConf, stderr: "Error: EACCES: permission denied, open '{OUT}/x'\n  errno: -13,\n  code: 'EACCES',\n  syscall: 'open',\n  path: '{OUT}/x'\n}\n", want: "file", path: "{OUT}/x"},
	{name: "rust, Landlock, no path printed", conf: landlockConf, command: "./rsprobe create {OUT}/x", stderr: "Error: Permission denied (os error 13)\n", want: "file", path: "{OUT}/x"},
	{name: "a POSIX semaphore, Landlock", conf: landlockConf, command: "python3 -c 'import multiprocessing; multiprocessing.Semaphore()'", stderr: "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n  File \"/usr/lib/python3.11/multiprocessing/synchronize.py\", line 57, in __init__\n    sl = self._semlock = _multiprocessing.SemLock(\n                         ^^^^^^^^^^^^^^^^^^^^^^^^^\nPermissionError: [Errno 13] Permission denied\n", want: "file", path: "/dev/shm"},

	// The network under --network deny.
	{name: "python connect", conf: bwrapConf, stderr: "Traceback (most recent call last):\n  File \"/usr/lib/python3.11/socket.py\", line 836, in create_connection\n    sock.connect(sa)\nOSError: [Errno 101] Network is unreachable\n", want: "network"},
	{name: "python name lookup", conf: bwrapConf, stderr: "socket.gaierror: [Errno -3] Temporary failure in name resolution\n", want: "network"},
	{name: "python urllib", conf: bwrapConf, stderr: "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n", want: "network"},
	{name: "curl by address", conf: bwrapConf, stderr: "curl: (7) Failed to connect to 1.1.1.1 port 80 after 0 ms: Couldn't connect to server\n", want: "network"},
	{name: "curl by name", conf: bwrapConf, stderr: "curl: (6) Could not resolve host: example.com\n", want: "network"},
	{name: "node dns", conf: bwrapConf, stderr: "Error: getaddrinfo EAI_AGAIN example.com\n    at GetAddrInfoReqWrap.onlookup [as oncomplete] (node:dns:111:26) {\n  errno: -3001,\n  code: 'EAI_AGAIN',\n", want: "network"},
	{name: "node fetch", conf: bwrapConf, stderr: "TypeError: fetch failed\n    at node:internal/deps/undici/undici:14976:13 {\n  [cause]: Error: connect ENETUNREACH 1.1.1.1:80 - Local (0.0.0.0:0)\n", want: "network"},
	{name: "go dial", conf: bwrapConf, stderr: "dial tcp 1.1.1.1:80: connect: network is unreachable\n", want: "network"},
	{name: "go lookup", conf: bwrapConf, stderr: "dial tcp: lookup example.com on 10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable\n", want: "network"},
	{name: "go lookup at a loopback stub resolver", conf: bwrapConf, stderr: "dial tcp: lookup example.com on 127.0.0.53:53: read udp 127.0.0.1:40000->127.0.0.53:53: read: connection refused\n", want: "network"},
	{name: "rust connect", conf: bwrapConf, stderr: "called `Result::unwrap()` on an `Err` value: Os { code: 101, kind: NetworkUnreachable, message: \"Network is unreachable\" }\n", want: "network"},
	{name: "java connect", conf: bwrapConf, stderr: "Exception in thread \"main\" java.net.SocketException: Network is unreachable\n\tat java.base/sun.nio.ch.Net.connect0(Native Method)\n", want: "network"},
	{name: "java lookup", conf: bwrapConf, stderr: "Exception in thread \"main\" java.net.UnknownHostException: example.com\n", want: "network"},
	{name: "npm registry", conf: bwrapConf, stderr: "npm error code EAI_AGAIN\nnpm error syscall getaddrinfo\nnpm error request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\n", want: "network"},
	{name: "pip index", conf: bwrapConf, stderr: "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f097ef6cc50>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/requests/\nERROR: No matching distribution found for requests\n", want: "network"},
	{name: "python socket, Landlock", conf: landlockConf, stderr: "  File \"/usr/lib/python3.11/socket.py\", line 232, in __init__\n    _socket.socket.__init__(self, family, type, proto, fileno)\nPermissionError: [Errno 1] Operation not permitted\n", want: "network"},
	{name: "node connect, Landlock", conf: landlockConf, stderr: "Error: connect EPERM 1.1.1.1:80 - Local (undefined:undefined)\n", want: "network"},
	{name: "go dial, Landlock", conf: landlockConf, stderr: "dial tcp 1.1.1.1:80: socket: operation not permitted\n", want: "network"},
	{name: "java connect, Landlock", conf: landlockConf, stderr: "Exception in thread \"main\" java.net.SocketException: Operation not permitted\n", want: "network"},
	{name: "a Unix socket under --unix-sockets deny", conf: unixDenied, stderr: "  File \"/usr/lib/python3.11/socket.py\", line 232, in __init__\n    _socket.socket.__init__(self, family, type, proto, fileno)\nPermissionError: [Errno 1] Operation not permitted\n", want: "network"},

	// Not the sandbox's.
	{name: "EACCES under bubblewrap is not its refusal", conf: bwrapConf, stderr: "PermissionError: [Errno 13] Permission denied: '{OUT}/x'\n"},
	{name: "a path in the workspace", conf: bwrapConf, stderr: "touch: cannot touch '{WS}/x': Read-only file system\n"},
	{name: "a relative path in the workspace", conf: landlockConf, stderr: "sh: 1: cannot create made: Permission denied\n"},
	{name: "a directory the user cannot write anyway", conf: bwrapConf, stderr: "touch: cannot touch '{OUT}/ro/x': Read-only file system\n"},
	{name: "a file the user cannot write anyway (a read refused)", conf: landlockConf, stderr: "cat: {OUT}/secret: Permission denied\n"},
	{name: "a device", conf: landlockConf, stderr: "sh: 1: cannot create /dev/null: Permission denied\n"},
	{name: "chmod of a file of another user", conf: bwrapConf, stderr: "chmod: changing permissions of '{OUT}/existing': Operation not permitted\n"},
	{name: "no space left", conf: bwrapConf, stderr: "cp: error writing '{WS}/x': No space left on device\n"},
	{name: "a refusal naming its path in the workspace, and a bare one", conf: bwrapConf, command: "cp a {OUT}/b", stderr: "npm error code EROFS\nnpm error rofs EROFS: read-only file system, open '{WS}/package.json'\n"},
	{name: "the program a command runs is no target", conf: bwrapConf, command: "{OUT}/prog", stderr: "Error: Read-only file system (os error 30)\n"},
	{name: "nor one run by a relative path", conf: bwrapConf, command: "{RELPROG} --to {OUT}/..", stderr: "Error: Read-only file system (os error 30)\n", want: "file", path: "{OUTPARENT}"},
	{name: "curl to loopback", conf: bwrapConf, stderr: "curl: (7) Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server\n"},
	{name: "connection refused", conf: bwrapConf, stderr: "dial tcp 127.0.0.1:9: connect: connection refused\n"},
	{name: "the network allowed", conf: networkAllowed, stderr: "curl: (6) Could not resolve host: example.com\nOSError: [Errno 101] Network is unreachable\n"},
	{name: "a socket EPERM with the network allowed and a named Unix socket", conf: namedOnly, stderr: "  File \"/usr/lib/python3.11/socket.py\", line 232, in __init__\n    _socket.socket.__init__(self, family, type, proto, fileno)\nPermissionError: [Errno 1] Operation not permitted\n"},
	{name: "EPERM with no socket in sight", conf: landlockConf, stderr: "kill: (1) - Operation not permitted\n"},

	// Capabilities pass every mode.
	{name: "a directory no mode lets anyone write, for a capable user", conf: landlockConf, capable: true, stderr: "touch: cannot touch '{OUT}/ro/x': Permission denied\n", want: "file", path: "{OUT}/ro/x"},
}

// denialDirs makes the workspace (a temp dir) and a directory outside every
// writable root (under /var/tmp, not a temp root), both canonical.
func denialDirs(t *testing.T) (ws, out string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	out, err = os.MkdirTemp("/var/tmp", "harness-denial-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(out) })
	out, err = filepath.EvalSymlinks(out)
	require.NoError(t, err)
	return ws, out
}

func TestInferenceOfCapturedMessages(t *testing.T) {
	ws, out := denialDirs(t)
	require.NoError(t, os.WriteFile(filepath.Join(out, "existing"), []byte("x"), 0o644))
	// Modes no one but a capable user writes through: the owner's bits
	// lack w, and others' too.
	require.NoError(t, os.Mkdir(filepath.Join(out, "ro"), 0o555))
	require.NoError(t, os.WriteFile(filepath.Join(out, "secret"), []byte("s"), 0o400))
	prog := filepath.Join(out, "prog")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755))

	r, err := execlocal.New(exec.Config{})
	require.NoError(t, err)
	tools := map[sandbox.VCS]*Tool{}
	policies := map[sandbox.VCS]*sandboxpolicy.Service{}
	for _, vcs := range []sandbox.VCS{"", sandbox.VCSReadOnly} {
		pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}, VCS: vcs})
		require.NoError(t, err)
		policies[vcs] = pol
		tools[vcs], err = New(Config{}, Deps{Runner: r, Policy: pol})
		require.NoError(t, err)
	}
	relProg, err := filepath.Rel(ws, prog)
	require.NoError(t, err)
	fill := strings.NewReplacer("{OUT}", out, "{WS}", ws, "{RELPROG}", relProg, "{OUTPARENT}", filepath.Dir(out)).Replace
	gids := []uint32{uint32(os.Getegid())}

	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			conf := f.conf
			conf.UID, conf.GIDs, conf.Capable = uint32(os.Geteuid()), gids, f.capable
			if os.Geteuid() == 0 && !f.capable {
				// A root server's commands run as root without
				// capabilities: the modes hold for them as they are.
				conf.UID = 0
			}
			req := exec.Request{Command: fill(f.command), Workdir: ws}
			stderr := fill(f.stderr)
			fd, isFile := tools[f.vcs].inferFileDenial(policies[f.vcs].Default(), &conf, req, stderr)
			detail, isNetwork := inferNetworkDenial(&conf, stderr)
			switch f.want {
			case "file":
				require.True(t, isFile, "no file denial inferred")
				assert.Equal(t, fill(f.path), fd.path)
				boundary := f.boundary
				if boundary == "" {
					boundary = outsideB
				}
				assert.True(t, strings.HasPrefix(fd.boundary, boundary), fd.boundary)
				assert.Contains(t, fd.detail(), `"`+fill(f.path)+`"`)
			case "network":
				assert.False(t, isFile, "a file denial inferred: %+v", fd)
				require.True(t, isNetwork, "no network denial inferred")
				assert.Contains(t, detail, "(inferred: the command failed and its stderr reports ")
			default:
				assert.False(t, isFile, "a file denial inferred: %+v", fd)
				assert.False(t, isNetwork, "a network denial inferred: %s", detail)
			}
		})
	}
}

// Under read-only, the workspace itself is refused: a relative path named
// by the shell is taken beneath the workdir.
func TestInferenceUnderReadOnly(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.ReadOnly, WorkspaceRoot: ws, TempRoots: []string{}})
	require.NoError(t, err)
	r, err := execlocal.New(exec.Config{})
	require.NoError(t, err)
	tl, err := New(Config{}, Deps{Runner: r, Policy: pol})
	require.NoError(t, err)
	conf := bwrapConf
	conf.UID, conf.GIDs = uint32(os.Geteuid()), []uint32{uint32(os.Getegid())}
	d, ok := tl.inferFileDenial(pol.Default(), &conf, exec.Request{Workdir: ws}, "sh: 1: cannot create made: Read-only file system\n")
	require.True(t, ok)
	assert.Equal(t, filepath.Join(ws, "made"), d.path)
	assert.Equal(t, sandboxpolicy.BoundaryReadOnly, d.boundary)
	assert.Equal(t, `(inferred: the command failed and its stderr reports "Read-only file system" on "`+filepath.Join(ws, "made")+`", the read-only mode allows no writes)`, d.detail())
}

// TestInferenceNamesTheToolchainCache (issue 36): a write refused in a
// toolchain's cache (npm's real EROFS under bubblewrap, captured from `npm
// cache verify`) says whose cache it is and that --toolchain-caches makes
// the existing caches writable, or, with it on, that this one did not
// exist at the server's start; a refusal elsewhere says nothing of caches.
func TestInferenceNamesTheToolchainCache(t *testing.T) {
	ws, out := denialDirs(t)
	npmCache := filepath.Join(out, "home", ".npm")
	require.NoError(t, os.MkdirAll(filepath.Join(npmCache, "_cacache"), 0o755))
	stderr := strings.ReplaceAll("npm error code EROFS\nnpm error syscall open\nnpm error path {C}/_cacache/index-v5/00/60/6a22\nnpm error errno -30\n"+
		"npm error rofs EROFS: read-only file system, open '{C}/_cacache/index-v5/00/60/6a22'\n"+
		"npm error rofs Often virtualized file systems, or other file systems that don't support symlinks, give this error.\n"+
		"npm error Log files were not written due to an error writing to the directory: {C}/_logs\n", "{C}", npmCache)
	pol, err := sandboxpolicy.New(sandboxpolicy.Config{Mode: sandbox.WorkspaceWrite, WorkspaceRoot: ws, TempRoots: []string{}})
	require.NoError(t, err)
	r, err := execlocal.New(exec.Config{})
	require.NoError(t, err)
	conf := bwrapConf
	conf.UID, conf.GIDs = uint32(os.Geteuid()), []uint32{uint32(os.Getegid())}
	caches := func() []toolchaincache.Cache {
		return []toolchaincache.Cache{{Tool: "go modules", Path: filepath.Join(out, "home", "go", "pkg", "mod")}, {Tool: "npm", Path: npmCache}}
	}
	for _, tc := range []struct {
		name     string
		cfg      Config
		stderr   string
		wantNote string
	}{
		{"no caches known", Config{}, stderr, ""},
		{
			"--toolchain-caches off",
			Config{ToolchainCaches: caches},
			stderr,
			"; it is npm's cache: the server's --toolchain-caches makes the toolchains' existing caches writable)",
		},
		{
			"--toolchain-caches on, the cache made after the start",
			Config{ToolchainCaches: caches, ToolchainCachesWritable: true},
			stderr,
			"; it is npm's cache, which did not exist when the server started (--toolchain-caches makes the caches then existing writable))",
		},
		{"a refusal outside the caches", Config{ToolchainCaches: caches}, "touch: cannot touch '" + filepath.Join(out, "home", "x") + "': Read-only file system\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl, err := New(tc.cfg, Deps{Runner: r, Policy: pol})
			require.NoError(t, err)
			d, ok := tl.inferFileDenial(pol.Default(), &conf, exec.Request{Workdir: ws}, tc.stderr)
			require.True(t, ok, "a file denial")
			if tc.wantNote == "" {
				assert.NotContains(t, d.detail(), "toolchain-caches")
				assert.True(t, strings.HasSuffix(d.detail(), outsideB+")"), d.detail())
				return
			}
			assert.Equal(t, filepath.Join(npmCache, "_cacache/index-v5/00/60/6a22"), d.path)
			assert.True(t, strings.HasSuffix(d.detail(), outsideB+tc.wantNote), d.detail())
		})
	}
}
