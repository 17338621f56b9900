#!/usr/bin/env bash
# Installs Debian's prometheus for the test that has a real Prometheus scrape
# codebridge's /metrics (cmd/codebridge TestPrometheusScrapesMetrics), which
# starts its own on 127.0.0.1 with a config and storage of its own. The
# package's services are not started (a policy-rc.d that says no, for the
# install only, unless the machine has one already) and, where systemd runs,
# disabled: nothing of it listens on :9090. Recommends (node-exporter) are
# left out.
set -euo pipefail

log() { printf 'prometheus.sh: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if command -v prometheus >/dev/null; then
  exit 0
fi
command -v apt-get >/dev/null || { log "no prometheus and no apt-get: install Prometheus 2.x on PATH, or its test skips (fails with CI=true)"; exit 0; }
log "installing Debian's prometheus, without starting its service"
policy=/usr/sbin/policy-rc.d made=
if [ ! -e $policy ]; then
  printf '#!/bin/sh\nexit 101\n' | as_root tee $policy >/dev/null
  as_root chmod +x $policy
  made=1
fi
rc=0
{ as_root apt-get update -qq &&
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || rc=$?
if [ -n "$made" ]; then as_root rm -f $policy; fi
if [ "$rc" != 0 ]; then log "installing prometheus failed"; exit "$rc"; fi
if [ -d /run/systemd/system ]; then
  as_root systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
