#!/usr/bin/env bash
# Prepares this machine to run codebridge: installs Podman (and runc, catatonit,
# debootstrap) when missing, fixes Podman's runtime/rlimit defaults only where a
# probe container fails, and builds the sandbox image: the data image
# localhost/codebridge-sandbox:latest, or with
# MCP_BRIDGE_IMAGE=localhost/codebridge-sandbox:minimal the minimal one. Safe to
# run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }
IMAGE=${MCP_BRIDGE_IMAGE:-localhost/codebridge-sandbox:latest}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. Packages.
missing=()
for pair in podman:podman runc:runc catatonit:catatonit debootstrap:debootstrap; do
  cmd=${pair%%:*} pkg=${pair##*:}
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    log "installing ${missing[*]} with apt-get"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    log "please install: ${missing[*]} (this script knows apt-get only)"
    exit 1
  fi
fi

# 2. The sandbox image (built locally from Debian packages; no registry needed):
#    the data image by default, the minimal one when MCP_BRIDGE_IMAGE names it.
#    Any other MCP_BRIDGE_IMAGE is the user's own.
case $IMAGE in
  localhost/codebridge-sandbox:latest)
    CODEBRIDGE_IMAGE_VARIANT=data CODEBRIDGE_IMAGE_NAME=$IMAGE scripts/build-image.sh ;;
  localhost/codebridge-sandbox:minimal)
    CODEBRIDGE_IMAGE_VARIANT=minimal CODEBRIDGE_IMAGE_NAME=$IMAGE scripts/build-image.sh ;;
esac

# 3. Can Podman start a container here? Some hosts need runc instead of crun
#    (cgroups in hybrid mode) and explicit default rlimits (a hard RLIMIT_NOFILE
#    below Podman's default). Fix that only when the probe fails.
probe() { podman run --rm --network none "$IMAGE" python3 -c 'print("ok")' 2>&1; }
if out=$(probe) && [ "$out" = ok ]; then
  log "podman runs containers"
else
  log "podman could not start a probe container: $out"
  conf=/etc/containers/containers.conf.d/50-codebridge.conf
  if [ "$(id -u)" != 0 ]; then conf=${XDG_CONFIG_HOME:-$HOME/.config}/containers/containers.conf.d/50-codebridge.conf; fi
  log "writing $conf (runtime runc, default ulimits nofile=1024 nproc=4096)"
  if [ "$(id -u)" = 0 ]; then mkdir -p "$(dirname "$conf")"; else mkdir -p "$(dirname "$conf")"; fi
  cat >"$conf" <<'CONF'
# Written by codebridge's scripts/setup.sh because a probe container failed.
[engine]
runtime = "runc"
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
CONF
  out=$(probe) && [ "$out" = ok ] || { log "podman still cannot start containers: $out"; exit 1; }
  log "podman runs containers"
fi
log "ready: image $IMAGE"
