#!/usr/bin/env bash
# Builds the harness binary at OUT (default bin/harness) with its command
# helper embedded: first the helper (internal/helperbin/helper, about 4 MB:
# only what confines and runs a command), then cmd/harness with the build
# tag harness_helper and go build's -overlay mapping
# internal/helperbin/helper.bin to that build, so nothing is written into
# the source tree and the two always come from the same tree. Each command
# then starts the small helper instead of a copy of the whole binary
# (docs/benchmarks.md: several milliseconds of CPU and wall time less per
# command). `go build ./cmd/harness` alone still works: that binary starts
# itself as the helper.
#
# Usage: scripts/build-harness.sh [OUT]
# Env:   GO  the go command (default go)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-bin/harness}"
go="${GO:-go}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$go" build -trimpath -o "$work/helper.bin" ./internal/helperbin/helper
printf '{"Replace":{"%s":"%s"}}\n' "$(pwd -P)/internal/helperbin/helper.bin" "$work/helper.bin" >"$work/overlay.json"
mkdir -p "$(dirname "$out")"
"$go" build -tags harness_helper -overlay "$work/overlay.json" -o "$out" ./cmd/harness
