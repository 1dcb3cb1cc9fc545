#!/usr/bin/env bash
# Brings bubblewrap (bwrap), which the command runner confines commands with,
# when it is missing: as root on a machine with apt-get it installs Debian's
# package `bubblewrap`; otherwise it prints one line saying what runs without
# it. It never fails, so `make demo` and `make test` go on either way.
set -uo pipefail

if command -v bwrap >/dev/null 2>&1; then
	exit 0
fi

without="without it exec refuses commands in read-only and workspace-write (unless run with --exec-isolation landlock); the file tools work"

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "need-bwrap: bwrap is missing; installing Debian's package bubblewrap" >&2
	if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } >&2 &&
		command -v bwrap >/dev/null 2>&1; then
		exit 0
	fi
	echo "need-bwrap: installing bubblewrap failed; $without" >&2
	exit 0
fi

echo "need-bwrap: bwrap is missing: install the package bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap); $without" >&2
exit 0
