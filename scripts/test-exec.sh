#!/usr/bin/env bash
# go test -exec wrapper for make test: runs one test binary ($1, with its
# arguments), the package that takes longest (services/execsandbox, whose
# binary is execsandbox.test) at the normal priority and every other at
# nice 10. On a machine with fewer cores than the test processes running at
# once, the other packages then take the cores the longest one leaves,
# rather than slowing it: the suite ends when it does (issue 37: on 2 cores
# its package took 456 s beside the rest, 249 s alone).
set -euo pipefail
case "$(basename "$1")" in
execsandbox.test) exec "$@" ;;
*) exec nice -n 10 "$@" ;;
esac
