#!/usr/bin/env bash
# Builds the harness binary at OUT (default bin/harness) with its command
# helper embedded: first the helper (internal/helperbin/helper, about 4 MB:
# only what confines and runs a command), then cmd/harness with the flags
# scripts/helper-flags.sh gives (the build tag harness_helper, go build's
# -overlay mapping internal/helperbin/helper.bin to that build, so nothing
# is written into the source tree, and the helper's SHA-256 stamped with
# -ldflags -X), which harness checks before it runs the embedded bytes (a
# helper from anywhere else is never run: harness starts itself instead). Each command then starts the
# small helper instead of a copy of the whole binary (docs/benchmarks.md:
# several milliseconds of CPU and wall time less per command). `go build
# ./cmd/harness` alone still works: that binary starts itself as the
# helper.
#
# Usage: scripts/build-harness.sh [OUT]
# Env:   GO       the go command (default go)
#        HARNESS_LDFLAGS  more Go linker flags for harness (e.g. "-s -w";
#                 not LDFLAGS, which C toolchains set for their linker); GOFLAGS
#                 applies to both builds, but its -tags and -ldflags are
#                 replaced by this script's for harness
set -euo pipefail

out="$(realpath -m -- "${1:-bin/harness}")"
go="${GO:-go}"
case "$go" in
*/*) go="$(realpath -- "$go")" ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
flags="$(GO="$go" ./scripts/helper-flags.sh "$work")"
mapfile -t flags <<<"$flags"
mkdir -p "$(dirname "$out")"
"$go" build "${flags[@]}" -o "$out" ./cmd/harness
