#!/usr/bin/env bash
# Runs the command runner's, the fence's and the file tools' tests a second
# time as an ordinary user, the way users run harness: no root, so no
# permission override, no CAP_SYS_ADMIN, no mounts of its own.
#
# Run as root. It creates the user when missing (useradd --create-home), copies
# the working tree (tracked and untracked files that are not ignored, without
# .git) into that user's home, so the checkout itself is left untouched, and
# runs `go test -race -count=1` there as that user through setpriv, with a clean
# environment and the user's own HOME, GOCACHE, GOMODCACHE and GOTMPDIR. The
# user's module cache is filled with `go mod download` through the module proxy
# (root's GOPROXY, GOSUMDB, GOPRIVATE, GONOSUMDB and GONOPROXY, and the
# http(s)_proxy variables when set); the caches stay in the user's home, so a
# second run downloads and compiles only what changed.
#
# Usage: scripts/test-unprivileged.sh [packages...]
#   default: the packages listed in PKGS below that exist in the tree
# Env:   HARNESS_TEST_USER  the user (default harness-ci)
#        GO                 the go command (default go); its GOROOT must be
#                           readable by the user (/usr/local/go is)
#        TESTFLAGS          extra go test flags, e.g. "-run TestX -v"
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
src="$(pwd -P)"

# The runner's, the fence's and the tools' packages. A path that does not
# exist (yet) is skipped.
PKGS=(
	./internal/subproc/...
	./internal/protectscan/...
	./services/sandboxpolicy/...
	./services/principal/...
	./services/execsandbox/...
	./services/execlocal/...
	./services/toolexec/...
	./services/fssandbox/...
	./services/fslocal/...
	./services/internal/fsbackend/...
	./internal/cgroup/...
	./services/toolfs/...
	./internal/landlock/...
	./internal/atomicwrite/...
	./internal/dirfd/...
	./internal/fsuser/...
	./services/journal/...
	./services/undo/...
	./services/cmdjournal/...
	./services/audit/...
	./cmd/harness/...
)

say() { echo "test-unprivileged: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	say "must run as root (it creates the user, copies the tree and drops to that user)"
	exit 2
fi

user="${HARNESS_TEST_USER:-harness-ci}"
GO="${GO:-go}"
gobin="$(command -v "$GO")" || {
	say "no $GO on PATH"
	exit 2
}
goroot="$("$gobin" env GOROOT)"

if [ "$#" -gt 0 ]; then
	pkgs=("$@")
else
	pkgs=()
	for p in "${PKGS[@]}"; do
		if [ -d "${p%/...}" ]; then
			pkgs+=("$p")
		else
			say "skipping $p: not in the tree"
		fi
	done
fi

if ! id -u "$user" >/dev/null 2>&1; then
	say "creating user $user"
	useradd --create-home --shell /bin/bash --user-group "$user"
fi
uid="$(id -u "$user")"
gid="$(id -g "$user")"
home="$(getent passwd "$user" | cut -d: -f6)"
if [ "$uid" -eq 0 ]; then
	say "user $user has uid 0; choose an ordinary user"
	exit 2
fi
if [ ! -d "$home" ]; then
	install -d -o "$uid" -g "$gid" -m 0755 "$home"
fi

# One run at a time per user: a second run waits rather than replacing the
# copy under the first one's feet.
exec 9>"$home/.test-unprivileged.lock"
if ! flock -n 9; then
	say "another run as $user is under way; waiting for it"
	flock 9
fi

# as_user CMD...: run CMD as the user in its copy of the tree, with a clean
# environment (only what go needs to reach the module proxy is passed on).
work="$home/harness"
envs=(
	"HOME=$home"
	"USER=$user"
	"LOGNAME=$user"
	"PATH=$goroot/bin:/usr/local/bin:/usr/bin:/bin"
	"LANG=C.UTF-8"
	"GOCACHE=$home/.cache/go-build"
	"GOPATH=$home/go"
	"GOMODCACHE=$home/go/pkg/mod"
	"GOTMPDIR=$home/.cache/gotmp"
)
for v in GOPROXY GOSUMDB GOPRIVATE GONOSUMDB GONOPROXY; do
	val="$("$gobin" env "$v")"
	if [ -n "$val" ]; then
		envs+=("$v=$val")
	fi
done
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
	if [ -n "${!v:-}" ]; then
		envs+=("$v=${!v}")
	fi
done
# The lock's descriptor is not passed on: a process a test leaves behind
# (a sandbox's pid 1 whose bubblewrap died with its test) would hold the
# lock for every later run.
as_user() {
	(cd "$work" && setpriv --reuid="$uid" --regid="$gid" --init-groups -- env -i "${envs[@]}" "$@" 9>&-)
}

if ! setpriv --reuid="$uid" --regid="$gid" --init-groups -- test -x "$goroot/bin/go"; then
	say "$user cannot execute $goroot/bin/go; install Go where every user can read it (e.g. /usr/local/go)"
	exit 2
fi

# A fresh copy of the working tree each run: what is committed, edited or new
# (not ignored), without .git (go test does not need it, and a .git owned by
# someone else makes the go command's VCS probe fail).
say "copying $src to $work (owned by $user)"
rm -rf "$work"
install -d -o "$uid" -g "$gid" -m 0755 "$work"
if git -c safe.directory='*' -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -c safe.directory='*' -C "$src" ls-files -z --cached --others --exclude-standard |
		tar -C "$src" --null -T - --ignore-failed-read --warning=no-failed-read -cf - |
		tar -C "$work" --no-same-owner -xf -
else
	tar -C "$src" --exclude=./.git --exclude=./bin --exclude=node_modules -cf - . |
		tar -C "$work" --no-same-owner -xf -
fi
chown -R "$uid:$gid" "$work"
setpriv --reuid="$uid" --regid="$gid" --init-groups -- \
	mkdir -p "$home/.cache/go-build" "$home/.cache/gotmp" "$home/go/pkg/mod"

say "go mod download as $user (its own module cache, $home/go/pkg/mod)"
as_user go mod download

# shellcheck disable=SC2206 # TESTFLAGS is a list of flags, split on purpose.
flags=(${TESTFLAGS:-})
say "go test -race -count=1${flags[*]:+ ${flags[*]}} as $user (uid $uid): ${pkgs[*]}"
start=$SECONDS
rc=0
as_user go test -race -count=1 -timeout 30m "${flags[@]}" "${pkgs[@]}" || rc=$?
say "done in $((SECONDS - start))s (exit $rc)"
exit "$rc"
