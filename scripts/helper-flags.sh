#!/usr/bin/env bash
# Builds the command helper (internal/helperbin/helper, about 4 MB: only
# what confines and runs a command) into DIR and prints, one per line, the
# go build and go test flags that embed it: the build tag harness_helper,
# an -overlay mapping internal/helperbin/helper.bin to DIR/helper.bin
# (nothing is written into the source tree) and -ldflags stamping its
# SHA-256, which harness checks before it runs the embedded bytes.
# scripts/build-harness.sh builds harness with them; make test and make
# check compile the test binaries with them, so the runner's tests start
# the helper a release starts (not a copy of the race-enabled test binary:
# about half the CPU of each command, docs/benchmarks.md).
#
# Usage: scripts/helper-flags.sh DIR   (DIR is made when missing; read
#        the flags one per line, e.g. mapfile -t, as the Makefile does)
# Env:   GO       the go command (default go)
#        HARNESS_LDFLAGS  more Go linker flags, added to the printed -ldflags
#                 (not LDFLAGS, which C toolchains set for their linker)
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: scripts/helper-flags.sh DIR" >&2
	exit 2
fi
mkdir -p -- "$1"
dir="$(realpath -- "$1")"
go="${GO:-go}"
case "$go" in
*/*) go="$(realpath -- "$go")" ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ -e internal/helperbin/helper.bin ]; then
	echo "helper-flags: internal/helperbin/helper.bin is in the tree: remove it (the overlay maps that name to the helper built here; a file there would be embedded by a build without the overlay)" >&2
	exit 1
fi
# The helper is built as a release builds it (no -race), whatever the
# build it is embedded in.
"$go" build -tags harness_helper -o "$dir/helper.bin" ./internal/helperbin/helper
sum="$(sha256sum "$dir/helper.bin" | cut -d' ' -f1)"
# The overlay's key is relative: the go command resolves it against its
# working directory, the module root, which a symlinked checkout spells
# differently from pwd -P. The value is JSON-escaped.
helper="$dir/helper.bin"
helper="${helper//\\/\\\\}"
helper="${helper//\"/\\\"}"
printf '{"Replace":{"internal/helperbin/helper.bin":"%s"}}\n' "$helper" >"$dir/overlay.json"
echo "-tags=harness_helper"
echo "-overlay=$dir/overlay.json"
echo "-ldflags=${HARNESS_LDFLAGS:-} -X=github.com/dsh-go/harness/internal/helperbin.sum=$sum"
