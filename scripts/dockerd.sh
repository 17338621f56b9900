#!/usr/bin/env bash
# A private Docker Engine for the tests and benchmarks against Docker: Debian's
# docker.io dockerd on a socket of its own, with its own containerd, no
# network bridge and no iptables rules, so it touches nothing else on the
# machine and needs no system service.
#
#   eval "$(scripts/dockerd.sh start)"   # starts one; prints the exports
#   eval "$(scripts/dockerd.sh start --runtime runsc)"  # with gVisor registered as runsc
#   scripts/dockerd.sh stop [RUNDIR]     # stops it: RUNDIR, else $CODEBRIDGE_DOCKERD_RUN
#
# start prints `export DOCKER_HOST=unix://RUNDIR/docker.sock CODEBRIDGE_DOCKERD_RUN=RUNDIR`
# once the daemon answers. Its images live in a data root cached under
# ~/.cache/codebridge/dockerd (CODEBRIDGE_DOCKERD_DATA), so a reused machine
# keeps the sandbox images it built; the cache is locked while a daemon uses
# it, and a second daemon started meanwhile gets a fresh data root of its own,
# removed at stop. stop ends the daemon, its containerd and every container
# shim under them, unmounts what they left and removes RUNDIR: nothing stays
# running. An interrupted start stops what it started.
# It installs docker.io with apt-get when dockerd is missing. --runtime runsc
# registers gVisor's runsc (on PATH) in the daemon's daemon.json with the flags
# codebridge's sandboxes need (confine.GVisorArgs), as codebridge setup
# --runtime runsc does for a system Docker.
set -euo pipefail

log() { printf 'dockerd: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

data_cache=${CODEBRIDGE_DOCKERD_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/codebridge/dockerd}

# stop_run RUNDIR: ends the daemon of RUNDIR and everything under it.
stop_run() {
  local run=$1 pid
  [ -d "$run" ] || return 0
  if [ -s "$run/daemon.pid" ]; then
    pid=$(cat "$run/daemon.pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      # dockerd stops its containers (SIGKILL: their stop signal) and its
      # containerd before it exits.
      for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  # containerd and shims started for this daemon name its exec root.
  local pids
  pids=$(pgrep -f -- "$run/" || true)
  if [ -n "$pids" ]; then
    kill -KILL $pids 2>/dev/null || true
  fi
  grep -o " $run/[^ ]*" /proc/mounts 2>/dev/null | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  if [ -f "$run/data-root" ]; then
    local data
    data=$(cat "$run/data-root")
    grep -o " $data/[^ ]*" /proc/mounts 2>/dev/null | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    if [ -f "$run/data-temporary" ]; then rm -rf "$data"; fi
  fi
  rm -rf "$run"
}

start() {
  local runtimes='{}'
  case "${1:-}" in
    "") ;;
    --runtime)
      [ "${2:-}" = runsc ] || { log "start --runtime: runsc is the one this script registers"; return 2; }
      command -v runsc >/dev/null || { log "start --runtime runsc: runsc is not installed (codebridge setup --runtime runsc installs it)"; return 1; }
      runtimes="{\"runtimes\": {\"runsc\": {\"path\": \"$(command -v runsc)\", \"runtimeArgs\": [\"--network=none\", \"--oci-seccomp\", \"--host-uds=open\"]}}}"
      ;;
    *) log "start: unknown option $1"; return 2 ;;
  esac
  if ! command -v dockerd >/dev/null; then
    log "installing docker.io (Debian's Docker Engine), without starting its system service"
    local policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then # the package's service would start a system dockerd
      policy=/usr/sbin/policy-rc.d
      printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
      as_root chmod +x "$policy"
    fi
    local ok=0
    as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq docker.io >/dev/null || ok=$?
    if [ -n "$policy" ]; then as_root rm -f "$policy"; fi
    if [ "$ok" != 0 ]; then log "installing docker.io failed"; return 1; fi
  fi
  run=$(mktemp -d /tmp/cbdockerd.XXXXXX) # global: the traps read it
  trap 'stop_run "$run"; exit 130' INT TERM
  trap 'status=$?; if [ $status -ne 0 ]; then stop_run "$run"; fi' EXIT
  chmod 0711 "$run"
  mkdir -p "$run/exec"

  # The cached data root, unless another daemon holds it.
  local data=$data_cache
  mkdir -p "$data"
  exec 9>"$data.lock"
  if ! flock -n 9; then
    log "$data is in use by another private dockerd: this one gets a data root of its own (its images are built anew)"
    exec 9>&-
    data=$run/data
    mkdir -p "$data"
    : >"$run/data-temporary"
  fi
  echo "$data" >"$run/data-root"
  echo "$runtimes" >"$run/daemon.json" # not /etc/docker/daemon.json

  # setsid: the daemon outlives this script, in a session of its own, and
  # holds the data root's lock (fd 9) for as long as it runs.
  setsid dockerd --host "unix://$run/docker.sock" --data-root "$data" --exec-root "$run/exec" \
    --pidfile "$run/dockerd.pid" --config-file "$run/daemon.json" --bridge none --iptables=false \
    --ip-masq=false --userland-proxy=false >"$run/dockerd.log" 2>&1 </dev/null &
  local pid=$!
  exec 9>&-
  echo "$pid" >"$run/daemon.pid"
  for _ in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "dockerd exited at start; its log:"; tail -n 30 "$run/dockerd.log" >&2; return 1
    fi
    if DOCKER_HOST=unix://$run/docker.sock docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
      log "dockerd $(DOCKER_HOST=unix://$run/docker.sock docker version --format '{{.Server.Version}}') on unix://$run/docker.sock, data root $data"
      echo "export DOCKER_HOST=unix://$run/docker.sock CODEBRIDGE_DOCKERD_RUN=$run"
      trap - INT TERM EXIT
      return 0
    fi
    sleep 0.1
  done
  log "dockerd did not answer within 60 s; its log:"; tail -n 30 "$run/dockerd.log" >&2
  return 1
}

case "${1:-}" in
start) shift; start "$@" ;;
stop)
  run=${2:-${CODEBRIDGE_DOCKERD_RUN:-}}
  if [ -z "$run" ]; then log "stop: which one? give its RUNDIR or set CODEBRIDGE_DOCKERD_RUN"; exit 2; fi
  case "$run" in /tmp/cbdockerd.*) ;; *) log "stop: $run is not a folder this script made"; exit 2 ;; esac
  stop_run "$run"
  ;;
*)
  echo "usage: $0 start [--runtime runsc] | stop [RUNDIR]" >&2
  exit 2
  ;;
esac
