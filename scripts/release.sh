#!/usr/bin/env bash
# Release binaries of codebridge for linux and darwin on amd64 and arm64: no cgo,
# -trimpath, the version stamped into `codebridge version`. Writes
# dist/codebridge_VERSION_OS_ARCH.tar.gz (the binary, README.md, LICENSE) and
# dist/codebridge_VERSION_checksums.txt (sha256), as .goreleaser.yaml does for
# maintainers who have GoReleaser.
#
#   scripts/release.sh v1.2.3      archives for a release (run it on the tag)
#   scripts/release.sh             the same, versioned by `git describe`
#   scripts/release.sh --check     cross-compile the four targets into a temporary
#                                  folder and delete it (what scripts/test.sh runs;
#                                  without -trimpath, so it reuses the suite's builds)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'release: %s\n' "$*" >&2; }

targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)

# build OS ARCH OUT VERSION [FLAGS...]: one static binary.
build() {
  GOOS=$1 GOARCH=$2 CGO_ENABLED=0 go build "${@:5}" \
    -ldflags "-s -w -X main.stampedVersion=$4" -o "$3" ./cmd/codebridge
}

if [ "${1:-}" = "--check" ]; then
  # Without -trimpath, which only changes file names in the binary: the
  # packages compiled here are then the ones the rest of scripts/test.sh
  # compiles (its CGO_ENABLED=0 build and its vet for darwin), and are reused.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for t in "${targets[@]}"; do
    build "${t%/*}" "${t#*/}" "$tmp/codebridge-${t%/*}-${t#*/}" v0.0.0-check
  done
  # The stamp reaches the binary that can run here.
  got=$("$tmp/codebridge-$(go env GOOS)-$(go env GOARCH)" version 2>/dev/null || true)
  if [ "$got" != "codebridge v0.0.0-check" ]; then
    log "the version stamp did not reach the binary: 'codebridge version' printed '$got'; check -X main.stampedVersion against cmd/codebridge/main.go"
    exit 1
  fi
  log "built ${targets[*]} (no cgo, version stamped)"
  exit 0
fi

version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)}
case $version in
  v*) ;;
  *) version=v0.0.0-$version ;; # no tag yet: git describe gave a bare commit
esac
plain=${version#v}
command -v sha256sum >/dev/null && sum=(sha256sum) || sum=(shasum -a 256)

rm -rf dist
mkdir -p dist
for t in "${targets[@]}"; do
  os=${t%/*} arch=${t#*/}
  name=codebridge_${plain}_${os}_${arch}
  mkdir -p "dist/$name"
  build "$os" "$arch" "dist/$name/codebridge" "$version" -trimpath
  cp README.md LICENSE "dist/$name/"
  tar -C "dist/$name" -czf "dist/$name.tar.gz" codebridge README.md LICENSE
  rm -rf "dist/${name:?}"
  log "dist/$name.tar.gz"
done
(cd dist && "${sum[@]}" -- *.tar.gz >"codebridge_${plain}_checksums.txt")
log "dist/codebridge_${plain}_checksums.txt"
