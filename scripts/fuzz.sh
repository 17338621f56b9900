#!/bin/sh
# Runs every fuzz target of the module, one after another, for
# CODEBRIDGE_FUZZTIME each (default 10s; any go test -fuzztime value), and
# stops at the first failure. Targets are found with go test -list in every
# package whose test files declare a func Fuzz..., so new ones are included
# without editing this script. scripts/test.sh runs it (CODEBRIDGE_TEST_FUZZ).
# Usage: scripts/fuzz.sh [packages...]   (default ./...)
set -eu
cd "$(dirname "$0")/.."
fuzztime=${CODEBRIDGE_FUZZTIME:-10s}
[ $# -gt 0 ] || set -- ./...
began=$(date +%s)
total=0
# Only the packages whose test files declare a fuzz target: go test -list
# builds a package's tests, which for every package of the module would cost
# more than the fuzzing.
pkgs=$(go list -f '{{$d := .Dir}}{{range .TestGoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .XTestGoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}' "$@" |
	xargs -r grep -l '^func Fuzz' | xargs -r -n1 dirname | sort -u)
for dir in $pkgs; do
	pkg=$(go list "$dir")
	# Not in a pipeline: a package whose tests do not build fails the script.
	if ! list=$(go test -list '^Fuzz' "$pkg"); then
		echo "FAIL: listing the fuzz targets of $pkg" >&2
		exit 1
	fi
	for t in $(printf '%s\n' "$list" | grep '^Fuzz' || true); do
		start=$(date +%s)
		echo "== $pkg $t ($fuzztime)"
		if ! go test -run '^$' -fuzz "^$t\$" -fuzztime "$fuzztime" "$pkg"; then
			echo "FAIL: $pkg $t after $(($(date +%s) - start))s; the failing input is a seed of $t or under the package's testdata/fuzz/$t/" >&2
			exit 1
		fi
		echo "ok: $pkg $t ran $(($(date +%s) - start))s"
		total=$((total + 1))
	done
done
if [ "$total" = 0 ]; then
	echo "FAIL: no fuzz targets found in $*" >&2
	exit 1
fi
echo "fuzz: $total targets passed, $fuzztime each, $(($(date +%s) - began))s in all"
