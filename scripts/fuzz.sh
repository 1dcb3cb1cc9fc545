#!/usr/bin/env bash
# Runs every fuzz target in the module, one at a time, for $FUZZTIME each.
#
# `go test -fuzz` accepts a single package and a regexp that must match exactly
# one fuzz target, so targets are discovered with `go test -list` (which sees
# build tags and external _test packages the same way `go test` does) and then
# run one by one. Failing inputs land in the package's testdata/fuzz/ as usual.
#
# Usage: scripts/fuzz.sh [packages...]   (default ./...)
# Env:   GO (default go), FUZZTIME (default 30s).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-30s}"
pkgs=("$@")
if [ "${#pkgs[@]}" -eq 0 ]; then
	pkgs=(./...)
fi

# `go test -list` prints the matching names of a package, then that package's
# "ok <import path> <time>" line; packages without tests print "? ...".
# Emit "<import path> <target>" pairs.
list="$("$GO" test -list '^Fuzz' "${pkgs[@]}")"
targets="$(awk '
	/^Fuzz[A-Za-z0-9_]*$/ { names[n++] = $1; next }
	/^ok[ \t]/ { for (i = 0; i < n; i++) print $2, names[i]; n = 0 }
' <<<"$list")"

if [ -z "$targets" ]; then
	echo "fuzz: no fuzz targets found"
	exit 0
fi

count="$(wc -l <<<"$targets")"
echo "fuzz: ${count} target(s), ${FUZZTIME} each"
while read -r pkg name; do
	echo "==> ${pkg} ${name}"
	"$GO" test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$pkg"
done <<<"$targets"
