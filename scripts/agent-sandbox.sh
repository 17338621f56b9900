#!/usr/bin/env bash
# Kubernetes SIG Apps' agent-sandbox (its CRDs and controller) on the cluster
# of scripts/kube.sh, for codebridge's claim path (MCP_BRIDGE_K8S_WARM_POOL,
# docs/kubernetes.md#agent-sandbox-claiming-sandboxes-from-a-controller).
#
#   scripts/agent-sandbox.sh up     build the controller (once, cached), apply the CRDs, run it
#   scripts/agent-sandbox.sh down   stop it and delete the CRDs (and so every object of theirs)
#
# The controller comes from sigs.k8s.io/agent-sandbox through the Go module
# proxy (a wrapper module in the cache requires it and builds its command).
# It runs as a process of this machine, with the cluster's admin kubeconfig,
# in a network namespace of its own: its webhook server listens on port 9443
# of every interface, with no flag for the address, and only its conversion
# webhook uses it (for v1alpha1 clients; codebridge speaks v1beta1).
# scripts/kube/netfwd carries its connections to the API server
# (127.0.0.1:16443) out of the namespace. Run `down` before `kube.sh down`.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=v0.5.0
MODULE=sigs.k8s.io/agent-sandbox
KUBE_DIR=${CODEBRIDGE_KUBE_DIR:-/var/lib/codebridge-kube}
DIR=$KUBE_DIR/agent-sandbox
CACHE=${CODEBRIDGE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codebridge/kube}
NETNS=codebridge-agent-sandbox
API=127.0.0.1:16443

log() { printf 'agent-sandbox: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
kubectl() { scripts/kube.sh kubectl "$@"; }
export GONOSUMDB=$MODULE # its releases are not in the checksum database

# build makes the controller and netfwd in the cache, once per version (and
# Go version and netfwd's source), and prints the folder.
build() {
  local hash out
  hash=$( { echo "$VERSION"; go env GOVERSION; cat scripts/kube/netfwd/*.go; } | sha256sum | cut -c1-12)
  out=$CACHE/agent-sandbox-$VERSION-$hash
  if [ ! -x "$out/bin/agent-sandbox-controller" ] || [ ! -x "$out/bin/netfwd" ]; then
    log "building agent-sandbox's controller $VERSION (the first time takes minutes)"
    mkdir -p "$out/src" "$out/bin"
    cat >"$out/src/go.mod" <<EOF
module codebridge.local/agent-sandbox

go 1.26

require $MODULE $VERSION
EOF
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s/cmd/agent-sandbox-controller"\n' "$MODULE" >"$out/src/tools.go"
    (cd "$out/src" && GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 &&
      CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out/bin/agent-sandbox-controller" "$MODULE/cmd/agent-sandbox-controller")
    CGO_ENABLED=0 go build -trimpath -o "$out/bin/netfwd" ./scripts/kube/netfwd
  fi
  echo "$out"
}

# crds prints the folder of the module's CRDs.
crds() {
  local dir
  dir=$(cd "$(build)/src" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$MODULE")
  echo "$dir/k8s/crds"
}

# alive NAME says whether the process whose PID is in $DIR/NAME.pid runs NAME.
alive() {
  local pid
  pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
  grep -q "$1" "/proc/$pid/cmdline" 2>/dev/null
}

stop() {
  local name pid
  for name in agent-sandbox-controller netfwd; do
    if alive "$name"; then
      pid=$(cat "$DIR/$name.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$DIR/$name.pid"
  done
  if ip netns list | grep -qw "$NETNS"; then ip netns delete "$NETNS"; fi
}

up() {
  [ "$(id -u)" = 0 ] || die "must run as root (a network namespace): sudo $0 up"
  scripts/kube.sh status >/dev/null || die "scripts/kube.sh's cluster is not running: start it with scripts/kube.sh up"
  local bin kubeconfig
  bin=$(build)/bin
  if alive agent-sandbox-controller; then
    log "the controller runs already (PID $(cat "$DIR/agent-sandbox-controller.pid"))"
    return
  fi
  stop
  mkdir -p "$DIR/certs"
  kubectl apply --server-side -f "$(crds)" >/dev/null
  kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
  # Its webhook certificates are kept in a Secret there.
  kubectl wait --for=delete namespace/agent-sandbox-system --timeout=2m >/dev/null 2>&1 || true # an earlier down's
  kubectl get namespace agent-sandbox-system >/dev/null 2>&1 || kubectl create namespace agent-sandbox-system >/dev/null
  kubeconfig=$(scripts/kube.sh env | sed -n 's/^export KUBECONFIG=//p')
  ip netns add "$NETNS"
  ip netns exec "$NETNS" ip link set lo up
  "$bin/netfwd" "/run/netns/$NETNS" "$API" >>"$DIR/netfwd.log" 2>&1 &
  echo $! >"$DIR/netfwd.pid"
  ip netns exec "$NETNS" env KUBECONFIG="$kubeconfig" "$bin/agent-sandbox-controller" --extensions \
    --leader-elect=false --metrics-bind-address=0 --health-probe-bind-address=0 \
    --webhook-cert-dir "$DIR/certs" >>"$DIR/controller.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$DIR/agent-sandbox-controller.pid"
  for _ in $(seq 600); do
    grep -q 'Starting workers.*sandboxclaim' "$DIR/controller.log" 2>/dev/null && break
    # kill -0, not alive: until the forked shell has run ip netns exec, its
    # command line does not name the controller yet.
    kill -0 "$pid" 2>/dev/null || { stop; die "the controller exited: $(tail -3 "$DIR/controller.log")"; }
    sleep 0.1
  done
  grep -q 'Starting workers.*sandboxclaim' "$DIR/controller.log" || { stop; die "the controller did not start in 60 s: $(tail -3 "$DIR/controller.log")"; }
  log "running (log: $DIR/controller.log)"
}

down() {
  stop
  if scripts/kube.sh status >/dev/null 2>&1; then
    kubectl delete -f "$(crds)" --ignore-not-found --wait=true --timeout=2m >/dev/null || true
    kubectl delete namespace agent-sandbox-system --ignore-not-found --wait=true --timeout=2m >/dev/null || true
  fi
  rm -rf "$DIR"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  build) build ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
