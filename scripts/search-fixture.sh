#!/usr/bin/env bash
# Builds the search benchmark fixture: copies of GOROOT and the Go module
# cache in a directory outside the repository, enough copies to hold at least
# MIN_FILES regular files. Prints the fixture's path and file count.
#
#   HARNESS_SEARCH_FIXTURE  where to build it (default /var/tmp/harness-search-fixture)
#   MIN_FILES               files it must hold (default 50000)
#
# An existing fixture with enough files is kept as it is. The module cache's
# files are read-only: remove the fixture with `chmod -R u+w DIR && rm -rf DIR`.
set -euo pipefail

GO=${GO:-go}
FIXTURE=${HARNESS_SEARCH_FIXTURE:-/var/tmp/harness-search-fixture}
MIN_FILES=${MIN_FILES:-50000}
GOROOT_DIR=$("$GO" env GOROOT)
MODCACHE_DIR=$("$GO" env GOMODCACHE)

count() { find "$FIXTURE" -type f | wc -l; }

case "$FIXTURE" in
"$(git rev-parse --show-toplevel 2>/dev/null || echo /nonexistent)"*)
	echo "search-fixture: $FIXTURE is inside the repository; choose a directory outside it" >&2
	exit 2
	;;
esac

mkdir -p "$FIXTURE"
n=$(count)
copy=0
while [ "$n" -lt "$MIN_FILES" ]; do
	copy=$((copy + 1))
	dest="$FIXTURE/copy-$copy"
	if [ ! -e "$dest" ]; then
		echo "search-fixture: copying $GOROOT_DIR and $MODCACHE_DIR into $dest ($n files so far)" >&2
		mkdir -p "$dest"
		cp -a "$GOROOT_DIR" "$dest/goroot"
		cp -a "$MODCACHE_DIR" "$dest/modcache"
	fi
	n=$(count)
done
echo "$FIXTURE $n"
