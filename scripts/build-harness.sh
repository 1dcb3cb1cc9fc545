#!/usr/bin/env bash
# Builds the harness binary at OUT (default bin/harness) with its command
# helper embedded: first the helper (internal/helperbin/helper, about 4 MB:
# only what confines and runs a command), then cmd/harness with the build
# tag harness_helper, go build's -overlay mapping
# internal/helperbin/helper.bin to that build (nothing is written into the
# source tree) and the helper's SHA-256 stamped (-ldflags -X), which harness
# checks before it runs the embedded bytes (a helper from anywhere else is
# never run: harness starts itself instead). Each command then starts the
# small helper instead of a copy of the whole binary (docs/benchmarks.md:
# several milliseconds of CPU and wall time less per command). `go build
# ./cmd/harness` alone still works: that binary starts itself as the
# helper.
#
# Usage: scripts/build-harness.sh [OUT]
# Env:   GO       the go command (default go)
#        LDFLAGS  more linker flags for harness (e.g. "-s -w"); GOFLAGS
#                 applies to both builds, but its -tags and -ldflags are
#                 replaced by this script's for harness
set -euo pipefail

out="$(realpath -m -- "${1:-bin/harness}")"
go="${GO:-go}"
case "$go" in
*/*) go="$(realpath -- "$go")" ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ -e internal/helperbin/helper.bin ]; then
	echo "build-harness: internal/helperbin/helper.bin is in the tree: remove it (this script maps that name to the helper it builds; a file there would be embedded by a build without the overlay)" >&2
	exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$go" build -tags harness_helper -o "$work/helper.bin" ./internal/helperbin/helper
sum="$(sha256sum "$work/helper.bin" | cut -d' ' -f1)"
# The overlay's key relative to this directory (the go command resolves it
# against its working directory, which a symlinked checkout spells
# differently from pwd -P); the value JSON-escaped.
helper="$work/helper.bin"
helper="${helper//\\/\\\\}"
helper="${helper//\"/\\\"}"
printf '{"Replace":{"internal/helperbin/helper.bin":"%s"}}\n' "$helper" >"$work/overlay.json"
mkdir -p "$(dirname "$out")"
"$go" build -tags harness_helper -overlay "$work/overlay.json" \
	-ldflags "${LDFLAGS:-} -X github.com/dsh-go/harness/internal/helperbin.sum=$sum" \
	-o "$out" ./cmd/harness
