#!/usr/bin/env bash
# Jaeger, the trace store that the end-to-end test of traces sends codebridge's
# spans to (cmd/codebridge TestTraceReachesJaeger, docs/observability.md).
#
#   scripts/jaeger.sh build   build it if it is not cached, and print its path
#   scripts/jaeger.sh env     the same, as `export CODEBRIDGE_TEST_JAEGER=...` for eval
#
# It is built from its Go module through the module proxy: scripts/jaeger is a
# wrapper module of its own, whose go.mod pins the version as a tool, so
# codebridge's go.mod does not grow with Jaeger's dependencies. The binary is
# cached under ~/.cache/codebridge/jaeger-VERSION; the first build takes
# minutes (about 7.5 minutes of CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=v1.75.0
MODULE=github.com/jaegertracing/jaeger
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/codebridge/jaeger-$VERSION

log() { printf 'jaeger: %s\n' "$*" >&2; }

build() {
  if ! grep -Eq "^	$MODULE $VERSION( |\$)" scripts/jaeger/go.mod; then
    log "scripts/jaeger/go.mod does not require $MODULE $VERSION: run (cd scripts/jaeger && go get -tool $MODULE/cmd/jaeger@$VERSION)"
    exit 1
  fi
  if [ ! -x "$CACHE/jaeger" ]; then
    log "building Jaeger $VERSION from its Go module (the first time takes minutes)"
    mkdir -p "$CACHE"
    (cd scripts/jaeger && CGO_ENABLED=0 go build -trimpath -o "$CACHE/jaeger.tmp" "$MODULE/cmd/jaeger")
    mv "$CACHE/jaeger.tmp" "$CACHE/jaeger"
  fi
  echo "$CACHE/jaeger"
}

case "${1:-}" in
build) build ;;
env)
  bin=$(build)
  printf 'export CODEBRIDGE_TEST_JAEGER=%q\n' "$bin"
  ;;
*)
  log "usage: scripts/jaeger.sh build|env"
  exit 2
  ;;
esac
