#!/usr/bin/env bash
# Runs the command runner's, the fence's and the file tools' tests a second
# time as an ordinary user, the way users run harness: no root, so no
# permission override, no CAP_SYS_ADMIN, no mounts of its own.
#
# Run as root. It creates the user when missing (useradd --create-home) and
# copies the working tree (tracked and untracked files that are not ignored,
# without .git) into that user's home, so the checkout itself is left
# untouched. Root compiles the packages' test binaries (`go test -c`, with
# the command helper embedded, as make test compiles them, but without the
# race detector: make test has just run every package under it, and what
# this pass checks is what depends on the user, at half the CPU) and the
# harness binary cmd/harness's tests serve (HARNESS_TEST_BINARY) from its
# own build cache, which make test's vet has just filled (and vetted: the
# compile does not vet again), so nothing runs the go command as the user. The user runs each binary in its package's directory
# of the copy, as `go test -count=1` would, through setpriv, with a clean
# environment and its own HOME; the binaries run three at a time
# (HARNESS_TEST_JOBS; they wait on commands more than they compute), the
# longest first (the order of PKGS), with -short but cmd/harness and
# services/internal/fsbackend (short_flag: the long loops shortened), and each package's result is printed as go test
# prints it.
#
# Usage: scripts/test-unprivileged.sh [packages...]
#   default: the packages listed in PKGS below that exist in the tree
# Env:   HARNESS_TEST_USER  the user (default harness-ci)
#        HARNESS_TEST_JOBS  test binaries run at once (default 3)
#        GO                 the go command (default go); its GOROOT must be
#                           readable by the user (/usr/local/go is)
#        HARNESS_TEST_SHORT 0 runs every package without -short (default:
#                           all but cmd/harness with it; see short_flag)
#        TESTFLAGS          extra test flags, in go test's spelling, e.g.
#                           "-run TestX -v" (passed to each binary as
#                           -test.run, -test.v)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
src="$(pwd -P)"
# go list names directories by the working directory as given: the
# physical one, so they lie beneath $src.
cd "$src"

# The runner's, the fence's and the tools' packages, the longest-running
# first (a package matched twice runs once). A path that does not exist (yet)
# is skipped.
PKGS=(
	./services/execsandbox/...
	./cmd/harness/internal/compose/...
	./services/toolexec/...
	./cmd/harness/...
	./services/fssandbox/...
	./internal/subproc/...
	./internal/protectscan/...
	./services/sandboxpolicy/...
	./services/principal/...
	./services/execlocal/...
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

# The environment the tests run in: a clean one, with the user's own home,
# the Go cache variables a user's shell has (harness finds the toolchain
# caches a command may write by them, toolchaincache), GOTMPDIR (where
# t.TempDir makes the tests' directories: in the user's home, not /tmp), and
# the proxy variables when set.
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
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
	if [ -n "${!v:-}" ]; then
		envs+=("$v=${!v}")
	fi
done

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

# go test's flags in the test binary's spelling: -run X is -test.run X.
tflags=()
verbose=0
# shellcheck disable=SC2206 # TESTFLAGS is a list of flags, split on purpose.
for f in ${TESTFLAGS:-}; do
	case "$f" in
	-test.*) ;;
	--*) f="-test.${f#--}" ;;
	-*) f="-test.${f#-}" ;;
	esac
	tflags+=("$f")
	case "$f" in -test.v | -test.v=true) verbose=1 ;; esac
done

# Root compiles the test binaries, one per package with tests (named by its
# import path's last element, as go test -c names them), into a fresh
# directory of its own outside the copy, where it also writes the logs: the
# user reads and runs them, and none of the user's processes, running while
# root writes there, can plant a link for root to follow. Removed at the end,
# with any test still running (as background jobs they ignore SIGINT, and
# would hold the user's lock for the next run).
scratch="$(mktemp -d /var/tmp/harness-unprivileged.XXXXXX)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"
bins="$scratch/bin"
logs="$scratch/log"
install -d -m 0755 "$bins" "$logs"
say "compiling the test binaries (go test -c, root's build cache)"
start=$SECONDS
# With the command helper embedded, as make test compiles them
# (scripts/helper-flags.sh): their commands start the helper a release
# starts.
hflags="$(GO="$gobin" ./scripts/helper-flags.sh "$scratch/helper")"
mapfile -t hflags <<<"$hflags"
"$gobin" test -c -vet=off "${hflags[@]}" -o "$bins/" "${pkgs[@]}"
# The harness binary cmd/harness's tests serve (they would build it as the
# user, in a build cache of the user's own: the whole module again), with
# its command helper embedded, as make build makes it.
if [ -d cmd/harness ]; then
	GO="$gobin" ./scripts/build-harness.sh "$bins/harness"
	envs+=("HARNESS_TEST_BINARY=$bins/harness")
fi
say "compiled in $((SECONDS - start))s"

# short_flag IMPORTPATH: whether the package runs with -test.short here.
# In these packages -short shortens the long loops (the race loops, the
# churn tests' 150 commands to 60), which make test has just run whole as
# root under the race detector, and skips two tests whose subject is not
# the user: fssandbox's symlink swap race of 10,000 durable writes, protectscan's wait out of
# the racy window. cmd/harness's tests skip whole under -short (they run
# the binary), and services/internal/fsbackend's crash loop and
# cross-process edits (their journal files are the user's), so those two
# run without. HARNESS_TEST_SHORT=0 runs every package whole.
short_flag() {
	[ "${HARNESS_TEST_SHORT:-1}" != 0 ] && [ "${1%/cmd/harness}" = "$1" ] && [ "${1%/services/internal/fsbackend}" = "$1" ]
}

# run_one IMPORTPATH DIR: run the package's test binary as the user in its
# directory of the copy, then print its result as go test does: the output
# only when it failed (or with -v), and an ok or FAIL line with the wall
# and CPU time.
# The lock's descriptor is not passed on: a process a test leaves behind (a
# sandbox's pid 1 whose bubblewrap died with its test) would hold the lock
# for every later run.
run_one() {
	local pkg="$1" rel="${2#"$src"}" name bin log rc=0 t0=$SECONDS
	rel="${rel#/}"
	name="${pkg##*/}"
	bin="$bins/$name.test"
	log="$logs/$name.log"
	if [ ! -x "$bin" ]; then
		printf '?   \t%s\t[no test files]\n' "$pkg"
		return 0
	fi
	# -short but for cmd/harness (see short_flag).
	local short=()
	if short_flag "$pkg"; then
		short=(-test.short)
	fi
	# The CPU time (user + system) of the binary and what it waited for.
	local TIMEFORMAT='%U %S' cpu
	{ time (cd "$work/$rel" && setpriv --reuid="$uid" --regid="$gid" --init-groups -- env -i "${envs[@]}" \
		"$bin" -test.paniconexit0 -test.count=1 -test.timeout=30m "${short[@]}" "${tflags[@]}" >"$log" 2>&1 9>&-); } 2>"$log.cpu" || rc=$?
	cpu="$(awk '{ printf "%.1f", $1 + $2 }' "$log.cpu" 2>/dev/null || echo '?')"
	{
		flock 8
		if [ "$rc" -ne 0 ] || [ "$verbose" -eq 1 ]; then
			cat "$log" 2>/dev/null || true
		fi
		if [ "$rc" -eq 0 ]; then
			printf 'ok  \t%s\t%ds (CPU %ss)\n' "$pkg" "$((SECONDS - t0))" "$cpu"
		else
			printf 'FAIL\t%s\t%ds (CPU %ss, exit %d)\n' "$pkg" "$((SECONDS - t0))" "$cpu" "$rc"
		fi
	} 8>>"$logs/.print.lock"
	return "$rc"
}

jobs_max="${HARNESS_TEST_JOBS:-3}"
say "running the tests as $user (uid $uid), $jobs_max at a time${tflags[*]:+, with ${tflags[*]}}"
start=$SECONDS
rc=0
running=0
# The list is read before any test starts: a job started inside the loop
# would share its input, and a test reading stdin would take the packages
# still to run.
list="$("$gobin" list -f '{{.ImportPath}} {{.Dir}}' "${pkgs[@]}")"
while read -r pkg dir; do
	if [ "$running" -ge "$jobs_max" ]; then
		wait -n || rc=1
		running=$((running - 1))
	fi
	run_one "$pkg" "$dir" </dev/null &
	running=$((running + 1))
done <<<"$list"
while [ "$running" -gt 0 ]; do
	wait -n || rc=1
	running=$((running - 1))
done
say "done in $((SECONDS - start))s (exit $rc)"
exit "$rc"
