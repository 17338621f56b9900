#!/usr/bin/env bash
# Runs a command, scripts/test.sh by default, under the conditions of a
# brand-new machine, on this one, where caches and earlier installs would
# hide what a fresh machine fails on:
#   - an empty npm folder, so the pinned trees of scripts/npm are installed anew;
#   - a private Podman store without images (CONTAINERS_STORAGE_CONF), which
#     the Podman API service codebridge starts for itself uses too, so
#     codebridge setup builds both sandbox images from nothing;
#   - a slow python3 first on PATH (0.3 s before the real one starts, as a
#     pyenv shim is slower still than Debian's), so no test may depend on how
#     fast a process starts;
#   - empty XDG cache, config and state folders (so Docker's data root, under
#     the cache, starts empty too).
# Go's module and build caches are kept, and so are the Kubernetes binaries
# scripts/kube.sh builds (CODEBRIDGE_KUBE_CACHE): they hold builds of pinned
# sources, nothing the suite could mistake for an install of its own; on a
# brand-new machine they are built. CI (.ci/run) runs the suite once, this way.
# Everything it makes lives in one folder, removed at the end.
# Usage: scripts/fresh.sh [COMMAND [ARGS...]]   (default scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'fresh: %s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/codebridge-fresh.XXXXXX")
cleanup() {
  status=$?
  if [ -n "${CONTAINERS_STORAGE_CONF:-}" ] && command -v podman >/dev/null; then
    podman rm --all --force >/dev/null 2>&1 || true
    podman rmi --all --force >/dev/null 2>&1 || true
  fi
  grep -o " $work/[^ ]*" /proc/mounts 2>/dev/null | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

mkdir -p "$work/storage" "$work/run" "$work/bin" "$work/npm" "$work/cache" "$work/config" "$work/state"
cat >"$work/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$work/storage"
runroot = "$work/run"
EOF
export CONTAINERS_STORAGE_CONF=$work/storage.conf
export CODEBRIDGE_TEST_NPM_DIR=$work/npm
GOCACHE=$(go env GOCACHE) && export GOCACHE # kept, though XDG_CACHE_HOME moves
# The built Kubernetes binaries stay where they were (see the top).
CODEBRIDGE_KUBE_CACHE=${CODEBRIDGE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codebridge/kube}
export CODEBRIDGE_KUBE_CACHE
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state

real_python=$(command -v python3 || true)
if [ -n "$real_python" ]; then
  cat >"$work/bin/python3" <<EOF
#!/bin/sh
sleep 0.3
exec $real_python "\$@"
EOF
  chmod +x "$work/bin/python3"
  export PATH=$work/bin:$PATH
  log "python3 on PATH is now a shim that waits 0.3 s, then runs $real_python"
fi

# The private store: the podman CLI of setup and the tests reads it from
# CONTAINERS_STORAGE_CONF, and so does the Podman API service codebridge
# starts for itself when no socket answers (CONTAINER_HOST would make the CLI
# a remote client, which cannot do what some tests do). A Podman socket that
# already answers would be used instead, with the machine's own store.
if command -v podman >/dev/null; then
  for sock in /run/podman/podman.sock "${XDG_RUNTIME_DIR:-/nonexistent}/podman/podman.sock"; do
    if [ -S "$sock" ] && timeout 10 podman --remote --url "unix://$sock" version >/dev/null 2>&1; then
      log "a Podman service answers at $sock: codebridge would use it and the machine's own store; stop it to rehearse a fresh machine"
      exit 1
    fi
  done
  unset CONTAINER_HOST CONTAINER_CONNECTION
  log "private Podman store $work/storage (no images)"
else
  log "podman is not installed: this machine is fresh already; scripts/test.sh installs it"
fi

[ $# -gt 0 ] || set -- scripts/test.sh
log "$* as on a fresh machine"
start=$(date +%s)
"$@"
log "passed in $(( $(date +%s) - start )) s"
