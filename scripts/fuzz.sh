#!/bin/sh
# Runs every fuzz target of the module, one after another, for
# CODEBRIDGE_FUZZTIME each (default 10s; any go test -fuzztime value), and
# stops at the first failure. Targets are found with go test -list, so new
# ones are included without editing this script.
# Usage: scripts/fuzz.sh [packages...]   (default ./...)
set -eu
cd "$(dirname "$0")/.."
fuzztime=${CODEBRIDGE_FUZZTIME:-10s}
[ $# -gt 0 ] || set -- ./...
total=0
for pkg in $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' "$@"); do
	targets=$(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
	for t in $targets; do
		start=$(date +%s)
		echo "== $pkg $t ($fuzztime)"
		if ! go test -run '^$' -fuzz "^$t\$" -fuzztime "$fuzztime" "$pkg"; then
			echo "FAIL: $pkg $t after $(( $(date +%s) - start ))s; the failing input is under the package's testdata/fuzz/$t/" >&2
			exit 1
		fi
		echo "ok: $pkg $t ran $(( $(date +%s) - start ))s"
		total=$((total + 1))
	done
done
echo "fuzz: $total targets passed, $fuzztime each"
