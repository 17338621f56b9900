#!/usr/bin/env bash
# Rehearses a brand-new machine on this one, where caches and earlier installs
# would hide what a fresh machine fails on: the whole suite (scripts/test.sh)
# runs with
#   - an empty npm folder, so the pinned trees of scripts/npm are installed anew;
#   - a private Podman store without images (CONTAINERS_STORAGE_CONF), which
#     the Podman API service codebridge starts for itself uses too, so
#     codebridge setup builds both sandbox images from nothing;
#   - a slow python3 first on PATH (0.3 s before the real one starts, as a
#     pyenv shim is slower still than Debian's), so no test may depend on how
#     fast a process starts;
#   - empty XDG cache, config and state folders;
#   - no Docker phase unless CODEBRIDGE_TEST_DOCKER=1 (see below), no fuzzing.
# Go's module and build caches are kept: they hold nothing the suite could
# mistake for an install of its own. CI runs this after scripts/test.sh.
# Everything it makes lives in one folder, removed at the end.
# Extra arguments go to scripts/test.sh.
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
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
# The Kubernetes phase is left out: scripts/test.sh ran it in the same CI run,
# and with the cache moved it would build Kubernetes from its sources again.
export CODEBRIDGE_TEST_KUBERNETES=${CODEBRIDGE_TEST_KUBERNETES:-0}
# So are the fuzz targets: they use no install, and ran in that run too.
export CODEBRIDGE_TEST_FUZZ=${CODEBRIDGE_TEST_FUZZ:-0}

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

# The Docker phase of scripts/test.sh would build both sandbox images into an
# empty Docker data root (XDG_CACHE_HOME is empty): minutes that CI, which ran
# that phase in scripts/test.sh already, leaves out unless
# CODEBRIDGE_TEST_DOCKER=1 asks for it.
export CODEBRIDGE_TEST_DOCKER=${CODEBRIDGE_TEST_DOCKER:-0}

# The end-to-end phase in the minimal image ran in scripts/test.sh already and
# depends on nothing a fresh machine lacks (the image itself is still built
# from nothing, for the tests that use it), and so did the race detector: on
# a brand-new machine, where .ci/run would have taken about 91 minutes of its
# 90 with both, the phase is left out and the suite runs without the
# detector, unless asked.
export CODEBRIDGE_TEST_MINIMAL=${CODEBRIDGE_TEST_MINIMAL:-0}
export CODEBRIDGE_TEST_RACE=${CODEBRIDGE_TEST_RACE:-0}
log "the whole suite, as on a fresh machine"
start=$(date +%s)
# The gVisor phase ran in scripts/test.sh already; its set-up writes system
# files (the runsc wrapper and Podman's registration) a private store does not
# change, so it is not repeated here unless asked.
CODEBRIDGE_TEST_GVISOR=${CODEBRIDGE_TEST_GVISOR:-0} scripts/test.sh "$@"
log "passed in $(( $(date +%s) - start )) s"
