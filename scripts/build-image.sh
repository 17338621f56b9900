#!/usr/bin/env bash
# Builds the sandbox image localhost/codebridge-sandbox:latest from Debian packages,
# with no container registry: debootstrap a minimal bookworm with python3, then
# `podman import` the tree. Takes about a minute; skipped when the image exists
# unless FORCE=1.
#
# People with registry access can instead run:
#   podman build -t localhost/codebridge-sandbox:latest -f configs/Containerfile configs
set -euo pipefail

IMAGE=${CODEBRIDGE_IMAGE_NAME:-localhost/codebridge-sandbox:latest}
SUITE=${CODEBRIDGE_DEBIAN_SUITE:-bookworm}

log() { printf 'build-image: %s\n' "$*" >&2; }

if [ "${FORCE:-0}" != 1 ] && podman image exists "$IMAGE" 2>/dev/null; then
  log "$IMAGE already exists (FORCE=1 rebuilds it)"
  exit 0
fi

for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { log "$tool is missing: run scripts/setup.sh first"; exit 1; }
done

# Use the Debian mirror this machine already trusts.
mirror=${CODEBRIDGE_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
    grep -v security | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//' |
    awk 'NR==1{print $1}' || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}

rootfs=$(mktemp -d "${TMPDIR:-/tmp}/codebridge-rootfs.XXXXXX")
trap 'rm -rf "$rootfs"' EXIT

log "debootstrap $SUITE from $mirror (about 40 s)"
debootstrap --variant=minbase --include=python3 "$SUITE" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
  tail -20 "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"

# Trim what a sandbox never needs.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*

log "importing as $IMAGE"
tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["python3"]' \
  --change 'WORKDIR /work' \
  --change 'LABEL io.codebridge.sandbox=1' \
  - "$IMAGE" >/dev/null
podman image exists "$IMAGE"
log "done: $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
