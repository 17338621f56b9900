#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, for codebridge's
# Kubernetes engine and its tests (docs/kubernetes.md).
#
#   scripts/kube.sh up       start it (or keep the one running) and print its KUBECONFIG
#   scripts/kube.sh down     stop it and remove everything it made
#   scripts/kube.sh env      print `export KUBECONFIG=...` (eval "$(scripts/kube.sh env)")
#   scripts/kube.sh check    run a hardened pod, exec python3 in it, delete it
#   scripts/kube.sh load [IMAGE...]   copy images from Podman into the cluster
#   scripts/kube.sh status   say whether it runs
#   scripts/kube.sh kubectl ARG...    kubectl against it
#   scripts/kube.sh build    only build the Kubernetes binaries
#   scripts/kube.sh image [IMAGE]     build codebridge and import it (localhost/codebridge:dev)
#
# Everything comes from the allowed package sources: containerd, runc, etcd,
# the CNI loopback plugin and openssl from Debian; kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet and kubectl built from
# k8s.io/kubernetes through the Go module proxy (once per version, cached in
# ~/.cache/codebridge/kube/); a CNI plugin and a pause binary of our own from
# scripts/kube/. It runs as root (containers, cgroups, mounts), on 127.0.0.1
# only, with no pod network: pods have only a loopback interface.
#
# All its state is under one folder, /var/lib/codebridge-kube
# (CODEBRIDGE_KUBE_DIR): a containerd of its own (socket, root and state),
# etcd's data, certificates, logs and PIDs. `down` stops every process by PID,
# unmounts, removes the cgroups, network namespaces, sockets, CNI caches and
# log links its pods made, restores the kernel settings the kubelet changed,
# and removes the folder. Safe to run again: `up` keeps a healthy cluster and otherwise cleans
# up what an earlier one left and starts afresh; `down` with nothing running
# does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBE_VERSION=v1.34.4
DIR=${CODEBRIDGE_KUBE_DIR:-/var/lib/codebridge-kube}
# The built binaries (CODEBRIDGE_KUBE_CACHE: e.g. kept by scripts/fresh.sh,
# which empties XDG_CACHE_HOME, so that it does not build Kubernetes again).
CACHE=${CODEBRIDGE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codebridge/kube}
NAMESPACE=${CODEBRIDGE_KUBE_NAMESPACE:-codebridge}
# Images copied from Podman by `up` (space-separated).
IMAGES=${CODEBRIDGE_KUBE_IMAGES:-localhost/codebridge-sandbox:minimal}
PAUSE_IMAGE=localhost/codebridge-kube-pause:1
# Ports, all on 127.0.0.1, away from each component's default so that a system
# etcd, containerd or another cluster can run beside this one.
ETCD_PORT=12379 ETCD_PEER_PORT=12380 API_PORT=16443
KUBELET_PORT=20250 KUBELET_HEALTHZ_PORT=20248 CM_PORT=20257 SCHED_PORT=20259
CGROUP=codebridge-kube # the kubelet's cgroup root, in every hierarchy

log() { printf 'kube: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
as_root_check() { [ "$(id -u)" = 0 ] || die "must run as root (it runs containerd, the kubelet and mounts): sudo $0 $*"; }

# ---- Build -------------------------------------------------------------------

# The Kubernetes binaries come from k8s.io/kubernetes at KUBE_VERSION. Its
# go.mod points the staging modules (k8s.io/api, ...) at relative folders, so
# `go install` refuses it; a wrapper module that requires it, repeats those
# replacements with the published v0.x versions, and imports each command's
# package builds them. The wrapper is generated in the cache (never committed),
# and the binaries are cached in a folder named by the version and the hash of
# these inputs, so a reused machine builds nothing.
KUBE_PACKAGES="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl"
kube_ldflags() {
  local minor=${KUBE_VERSION#v1.} pkg flags="-s -w"
  minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  printf '%s' "$flags"
}
kube_tools_go() {
  printf '//go:build tools\n\n// Package tools makes go mod tidy keep what the Kubernetes commands need.\npackage tools\n\nimport (\n'
  printf '\t_ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n'
  printf '\t_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"\n'
  printf '\t_ "k8s.io/kubernetes/cmd/kube-scheduler/app"\n'
  printf '\t_ "k8s.io/kubernetes/cmd/kubelet/app"\n'
  printf '\t_ "k8s.io/kubectl/pkg/cmd"\n'
  printf '\t_ "k8s.io/component-base/cli"\n)\n'
}
kube_bin_dir() {
  local hash
  hash=$( { echo "$KUBE_VERSION $KUBE_PACKAGES"; kube_ldflags; kube_tools_go; go env GOVERSION GOARCH; } | sha256sum | cut -c1-12)
  printf '%s/%s-%s' "$CACHE" "$KUBE_VERSION" "$hash"
}
# prune_cache DIR: marks DIR as used and removes the other builds in the
# cache unused for a week (not at once: two checkouts of different versions on
# one machine each keep theirs, as scripts/npm.sh does for npm trees).
prune_cache() {
  mkdir -p "$CACHE"
  [ -d "$1" ] && touch "$1"
  find "$CACHE" -mindepth 1 -maxdepth 1 -type d \( -name 'v*-*' -o -name 'own-*' \) ! -path "$1" -mtime +7 -exec rm -rf {} +
}
build_kube() {
  command -v go >/dev/null || die "Go is missing: install Go 1.26 or newer (https://go.dev/dl/)"
  local out src mod start
  out=$(kube_bin_dir)
  prune_cache "$out"
  [ -f "$out/bin/.complete" ] && { BIN=$out/bin; return; }
  log "building Kubernetes $KUBE_VERSION from its Go sources into $out (once; 6 minutes on 2 idle cores, far longer on a busy machine)"
  start=$SECONDS
  rm -rf "$out" && mkdir -p "$out/src"
  src=$out/src
  mod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -f "$mod" ] || die "could not download k8s.io/kubernetes@$KUBE_VERSION through the Go module proxy ($(go env GOPROXY))"
  {
    printf 'module codebridge.local/kube\n\ngo 1.24.0\n\ngodebug default=go1.24\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_VERSION"
    sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#\t\1 => \1 '"v0.${KUBE_VERSION#v1.}"'#p' "$mod"
    printf ')\n'
  } >"$src/go.mod"
  kube_tools_go >"$src/tools.go"
  (cd "$src" && GOFLAGS=-mod=mod go mod tidy >&2)
  mkdir -p "$out/bin.new"
  # One go build for all five shares the compiled packages between them.
  # shellcheck disable=SC2086
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags "$(kube_ldflags)" -o "$out/bin.new/" $KUBE_PACKAGES)
  touch "$out/bin.new/.complete"
  mv "$out/bin.new" "$out/bin"
  log "built Kubernetes $KUBE_VERSION in $((SECONDS - start)) s"
  BIN=$out/bin
}

# ---- Debian packages -----------------------------------------------------------

# install_packages installs what is missing. The packages' own services
# (a system etcd and containerd) are not started: this cluster runs its own,
# and a machine without them before has none after (a policy-rc.d that says
# no, for the install only, unless the machine has one already).
install_packages() {
  local need=()
  command -v containerd >/dev/null && command -v ctr >/dev/null && command -v containerd-shim-runc-v2 >/dev/null || need+=(containerd)
  command -v runc >/dev/null || need+=(runc)
  command -v etcd >/dev/null || need+=(etcd-server)
  [ -x /usr/lib/cni/loopback ] || need+=(containernetworking-plugins)
  command -v openssl >/dev/null || need+=(openssl)
  [ ${#need[@]} = 0 ] && return
  command -v apt-get >/dev/null || die "missing ${need[*]} and no apt-get: install them (Debian/Ubuntu package names)"
  log "installing ${need[*]} (apt-get)"
  local policy=/usr/sbin/policy-rc.d made=
  if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' >$policy && chmod +x $policy && made=1; fi
  local rc=0
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; } || rc=$?
  [ -n "$made" ] && rm -f $policy
  return $rc
}

# ---- Our own programs and the pause image ------------------------------------

# build_own builds the CNI plugin and the pause binary of scripts/kube/ into
# the cache, named by the hash of their sources.
build_own() {
  local hash out
  hash=$( { go env GOVERSION; cat scripts/kube/cni/*.go scripts/kube/pause/*.go; } | sha256sum | cut -c1-12)
  out=$CACHE/own-$hash
  prune_cache "$out"
  if [ ! -f "$out/.complete" ]; then
    rm -rf "$out" && mkdir -p "$out"
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$out/codebridge-cni" ./scripts/kube/cni
    CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags '-s -w' -o "$out/pause" ./scripts/kube/pause
    touch "$out/.complete"
  fi
  OWN=$out
}

# binary_archive ARCHIVE IMAGE BINARY USER writes an OCI image archive holding
# one static binary as /NAME, its entrypoint, run as USER (uid:gid): one layer,
# the image's config, its manifest, and an index that names it IMAGE, for
# `ctr images import`. The pause image is one; codebridge's own (`image`) another.
binary_archive() {
  local archive=$1 image=$2 binary=$3 user=$4 name tmp layer config manifest
  name=$(basename "$binary")
  tmp=$DIR/tmp/archive-$name
  rm -rf "$tmp" && mkdir -p "$tmp/root" "$tmp/oci/blobs/sha256"
  cp "$binary" "$tmp/root/$name"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$tmp/root" -cf "$tmp/layer.tar" "$name"
  blob() { # FILE: stores it as a blob, prints "DIGEST SIZE"
    local d; d=$(sha256sum "$1" | cut -d' ' -f1)
    cp "$1" "$tmp/oci/blobs/sha256/$d"
    printf '%s %s' "$d" "$(stat -c %s "$1")"
  }
  layer=($(blob "$tmp/layer.tar"))
  printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":["/%s"],"User":"%s"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$(go env GOARCH)" "$name" "$user" "${layer[0]}" >"$tmp/config.json"
  config=($(blob "$tmp/config.json"))
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "${config[0]}" "${config[1]}" "${layer[0]}" "${layer[1]}" >"$tmp/manifest.json"
  manifest=($(blob "$tmp/manifest.json"))
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "${manifest[0]}" "${manifest[1]}" "$image" "${image##*:}" >"$tmp/oci/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$tmp/oci/oci-layout"
  tar -C "$tmp/oci" -cf "$archive" .
  rm -rf "$tmp"
}

# codebridge_image [IMAGE] builds codebridge from this checkout (static, no
# cgo) and imports it into the cluster as IMAGE (default $CODEBRIDGE_IMAGE),
# for configs/kubernetes: one binary in one layer, no shell, no registry.
CODEBRIDGE_IMAGE=localhost/codebridge:dev
codebridge_image() {
  local image=${1:-$CODEBRIDGE_IMAGE} out=$DIR/tmp/codebridge-image
  rm -rf "$out" && mkdir -p "$out"
  CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags '-s -w' -o "$out/codebridge" ./cmd/codebridge
  binary_archive "$out/image.tar" "$image" "$out/codebridge" 65532:65532
  ctr_ images import "$out/image.tar" >/dev/null
  log "imported $image ($(stat -c %s "$out/codebridge") bytes of codebridge, $(ctr_ images ls "name==$image" -q | wc -l) image)"
  rm -rf "$out"
  echo "$image"
}

# ---- Configuration -------------------------------------------------------------

# make_pki makes a CA and every certificate the components use, with openssl
# (ECDSA P-256 keys: fast to make). Nothing outside the cluster's folder trusts
# this CA.
make_pki() {
  local p=$DIR/pki
  mkdir -p "$p" && chmod 700 "$p"
  key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$p/$1.key" 2>/dev/null; }
  key ca
  openssl req -x509 -new -key "$p/ca.key" -subj /CN=codebridge-kube-ca -days 3650 -out "$p/ca.crt" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
  cert() { # NAME SUBJECT EXTENDED-KEY-USAGE [SUBJECT-ALT-NAMES]
    local ext="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=$3\n"
    [ -n "${4:-}" ] && ext+="subjectAltName=$4\n"
    key "$1"
    openssl req -new -key "$p/$1.key" -subj "$2" |
      openssl x509 -req -CA "$p/ca.crt" -CAkey "$p/ca.key" -set_serial "0x$(openssl rand -hex 16)" -days 3650 \
        -extfile <(printf "$ext") -out "$p/$1.crt" 2>/dev/null
  }
  cert etcd /CN=etcd serverAuth IP:127.0.0.1,DNS:localhost
  cert apiserver-etcd-client /CN=kube-apiserver-etcd-client clientAuth
  cert apiserver /CN=kube-apiserver serverAuth \
    IP:127.0.0.1,IP:127.0.99.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
  cert apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client clientAuth
  cert admin /O=system:masters/CN=codebridge-admin clientAuth
  cert controller-manager /CN=system:kube-controller-manager clientAuth
  cert scheduler /CN=system:kube-scheduler clientAuth
  cert kubelet /O=system:nodes/CN=system:node:localhost clientAuth
  cert kubelet-serving /CN=localhost serverAuth IP:127.0.0.1,DNS:localhost
  key service-account
  openssl pkey -in "$p/service-account.key" -pubout -out "$p/service-account.pub"
}

# kubeconfig NAME [NAMESPACE]: a kubeconfig for the certificate NAME, with
# everything embedded so that it can be copied elsewhere on this machine.
kubeconfig() {
  local p=$DIR/pki
  cat <<YAML
apiVersion: v1
kind: Config
clusters:
- name: codebridge-kube
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$p/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$p/$1.crt")
    client-key-data: $(base64 -w0 "$p/$1.key")
contexts:
- name: codebridge-kube
  context:
    cluster: codebridge-kube
    user: $1
    namespace: ${2:-default}
current-context: codebridge-kube
YAML
}

write_config() {
  local c=$DIR/config
  mkdir -p "$c" "$DIR/cni/bin" "$DIR/cni/conf" "$DIR/log" "$DIR/pid" "$DIR/images" "$DIR/kubelet/seccomp"
  # codebridge's seccomp profile where the kubelet finds Localhost profiles,
  # for MCP_BRIDGE_K8S_SECCOMP_PROFILE=codebridge.json (docs/kubernetes.md).
  cp runtime/confine/seccomp.json "$DIR/kubelet/seccomp/codebridge.json"
  kubeconfig admin "$NAMESPACE" >"$DIR/kubeconfig"
  kubeconfig controller-manager >"$c/controller-manager.kubeconfig"
  kubeconfig scheduler >"$c/scheduler.kubeconfig"
  kubeconfig kubelet >"$c/kubelet.kubeconfig"
  chmod 600 "$DIR/kubeconfig" "$c"/*.kubeconfig

  # CNI: the standard loopback plugin (containerd brings lo up with it) and
  # ours, which reports a pod address without making a network.
  ln -sf /usr/lib/cni/loopback "$DIR/cni/bin/loopback"
  ln -sf "$OWN/codebridge-cni" "$DIR/cni/bin/codebridge-cni"
  printf '{"cniVersion":"1.0.0","name":"codebridge-none","plugins":[{"type":"codebridge-cni"}]}\n' >"$DIR/cni/conf/10-codebridge.conflist"

  # containerd: its own socket, root and state; network namespaces under its
  # state folder rather than /run/netns; runc's state under ours;
  # restrict_oom_score_adj because root here may not lower oom_score_adj
  # (runc fails with "can't get final child's PID from pipe: EOF" otherwise);
  # the plugins that would write outside its folders (opt: /opt/containerd)
  # and the snapshotters it does not use are off.
  cat >"$c/containerd.toml" <<TOML
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$DIR/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$DIR/cni/bin"
    conf_dir = "$DIR/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$DIR/runc"
        SystemdCgroup = false
TOML

  # kubelet: on 127.0.0.1, cgroupfs with its own cgroup root, no swap check,
  # cgroup v1 allowed (this machine's), image garbage collection off (images
  # come from Podman, never from a registry), eviction only when nearly full.
  cat >"$c/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $DIR/pki/kubelet-serving.crt
tlsPrivateKeyFile: $DIR/pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $DIR/pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$DIR/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP
failCgroupV1: false
failSwapOn: false
podLogsDir: $DIR/pod-logs
volumePluginDir: $DIR/kubelet/volume-plugins
clusterDomain: cluster.local
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%, nodefs.inodesFree: 2%}
# A pod has no pids limit of its own in its spec: the kubelet's applies to
# every pod of the node. 128 is codebridge's default (MCP_BRIDGE_PIDS).
podPidsLimit: 128
rotateCertificates: false
serverTLSBootstrap: false
# No iptables chains (KUBE-FIREWALL, KUBE-IPTABLES-HINT, canaries): they serve
# kube-proxy and pod networks, which this cluster does not have.
makeIPTablesUtilChains: false
YAML
}

# ---- Processes -------------------------------------------------------------------

# start NAME COMMAND...: runs COMMAND in a session of its own (so that ^C in
# the shell that ran `up` does not reach it), logging to log/NAME.log, without
# the lock's file descriptor (which it would otherwise hold for its lifetime).
start() {
  local name=$1
  shift
  setsid "$@" >"$DIR/log/$name.log" 2>&1 </dev/null 9>&- &
  echo $! >"$DIR/pid/$name"
}
# alive NAME: its process runs (the PID in pid/NAME still runs what we started).
alive() {
  local pid
  pid=$(cat "$DIR/pid/$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && grep -q "$DIR" "/proc/$pid/cmdline" 2>/dev/null
}
# stop NAME...: SIGTERM to each, then SIGKILL to those still running after 3 s
# (the cluster is thrown away: a graceful end matters little).
stop() {
  local name pid pids=() i
  for name in "$@"; do
    if alive "$name"; then pids+=("$(cat "$DIR/pid/$name")"); fi
    rm -f "$DIR/pid/$name"
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for ((i = 0; i < 30; i++)); do
    running "${pids[@]}" || return 0
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
  while running "${pids[@]}"; do sleep 0.1; done
}
# running PID...: one of them still runs (a zombie, which its parent has yet
# to reap, no longer does).
running() {
  local pid
  for pid in "$@"; do
    [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null && return 0
  done
  return 1
}
# wait_for DESCRIPTION SECONDS NAME COMMAND...: polls COMMAND until it succeeds;
# fails with the end of NAME's log if NAME's process ends or time runs out.
wait_for() {
  local what=$1 timeout=$2 name=$3 deadline
  shift 3
  deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$name"; then
      tail -n 20 "$DIR/log/$name.log" >&2 || true
      die "$name ended while waiting for $what (its log: $DIR/log/$name.log)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 20 "$DIR/log/$name.log" >&2 || true
      die "no $what after ${timeout} s (see $DIR/log/)"
    fi
    sleep 0.2
  done
}
kctl() { "$BIN/kubectl" --kubeconfig "$DIR/kubeconfig" "$@"; }
ctr_() { ctr --address "$DIR/containerd.sock" --namespace k8s.io "$@"; }
node_ready() {
  [ "$(kctl get node localhost -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# The kernel settings the kubelet sets at start (and that are never set back):
# saved before it starts, restored by `down`.
KUBELET_SYSCTLS="vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes"
save_sysctls() {
  local k
  for k in $KUBELET_SYSCTLS; do printf '%s %s\n' "$k" "$(cat "/proc/sys/$k")"; done >"$DIR/sysctls"
}
restore_sysctls() {
  local k v
  [ -f "$DIR/sysctls" ] || return 0
  while read -r k v; do
    [ "$(cat "/proc/sys/$k")" = "$v" ] || echo "$v" >"/proc/sys/$k" || log "could not set $k back to $v"
  done <"$DIR/sysctls"
}

# make_cgroups makes the kubelet's cgroup root in every hierarchy (it
# refuses to start without it); a cpuset cgroup starts with the CPUs and memory
# nodes of its parent (cgroup v1 leaves them empty).
make_cgroups() {
  local h
  for h in $(awk '$1 ~ /^cgroup2?$/ && $3 ~ /^cgroup2?$/ && $2 != "/sys/fs/cgroup/unified" { print $2 }' /proc/self/mounts); do
    mkdir -p "$h/$CGROUP"
    if [ -f "$h/cpuset.cpus" ] && [ -f "$h/$CGROUP/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" >"$h/$CGROUP/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h/$CGROUP/cpuset.mems"
    fi
  done
}

# What the cluster makes outside its folder whatever its settings:
# containerd's shims put their sockets in /run/containerd/s; the kubelet links
# containers' logs in /var/log/containers and serves device plugins at
# /var/lib/kubelet/device-plugins/kubelet.sock; CNI caches results in
# /var/lib/cni/results. note_outside notes which of these folders exist before
# the start, so that `down` removes the folders it made, not only their files.
OUTSIDE="/run/containerd /var/log/containers /var/lib/kubelet /var/lib/cni"
note_outside() {
  local d
  for d in $OUTSIDE; do [ -e "$d" ] || echo "$d"; done >"$DIR/made-outside"
}
# remove_outside removes the cluster's files there (ids: the cluster's
# containers and pod sandboxes), then the folders it made, if empty.
remove_outside() {
  local id d
  for id in "$@"; do
    rm -f /run/containerd/s/"$(printf '%s' "$DIR/containerd.sock/k8s.io/$id" | sha256sum | cut -d' ' -f1)"
    rm -f /var/lib/cni/results/*-"$id"-*
  done
  rm -f /var/lib/cni/results/codebridge-none-*
  if [ -d /var/log/containers ]; then find /var/log/containers -maxdepth 1 -type l -lname "$DIR/*" -delete; fi
  [ -f "$DIR/made-outside" ] || return 0
  while read -r d; do
    [ "$d" = /var/lib/kubelet ] && rm -f /var/lib/kubelet/device-plugins/kubelet.sock
    if [ -d "$d" ]; then find "$d" -depth -type d -empty -delete; fi
  done <"$DIR/made-outside"
}

# healthy: every component runs and the API server is ready.
healthy() {
  local name
  [ -f "$DIR/bin" ] || return 1
  BIN=$(cat "$DIR/bin")
  for name in containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet; do alive "$name" || return 1; done
  kctl get --raw /readyz >/dev/null 2>&1 && node_ready
}

up() {
  as_root_check up
  install_packages
  build_kube
  build_own
  if healthy; then
    log "already running"
  else
    [ -d "$DIR" ] && { log "cleaning up what an earlier cluster left in $DIR"; down; }
    # Whatever fails or interrupts a start from here leaves nothing behind.
    trap 'rc=$?; [ $rc = 0 ] || { log "start failed: tearing down"; down; }; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    start_cluster
    trap - EXIT INT TERM
  fi
  # shellcheck disable=SC2086
  load_images $IMAGES
  log "ready; use it with: eval \"\$($0 env)\""
  echo "$DIR/kubeconfig"
}

start_cluster() {
  local t0ns
  t0ns=$(date +%s%N)
  log "starting Kubernetes $KUBE_VERSION in $DIR"
  mkdir -p "$DIR" "$DIR/tmp"
  chmod 700 "$DIR"
  echo "$BIN" >"$DIR/bin"
  note_outside
  make_pki
  write_config
  save_sysctls
  make_cgroups

  start containerd containerd --config "$DIR/config/containerd.toml"
  start etcd etcd --name codebridge-kube --data-dir "$DIR/etcd" \
    --listen-client-urls "https://127.0.0.1:$ETCD_PORT" --advertise-client-urls "https://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "codebridge-kube=http://127.0.0.1:$ETCD_PEER_PORT" \
    --cert-file "$DIR/pki/etcd.crt" --key-file "$DIR/pki/etcd.key" \
    --client-cert-auth --trusted-ca-file "$DIR/pki/ca.crt"
  start kube-apiserver "$BIN/kube-apiserver" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --cert-dir="$DIR/pki/kube-apiserver" \
    --etcd-servers="https://127.0.0.1:$ETCD_PORT" --etcd-cafile="$DIR/pki/ca.crt" \
    --etcd-certfile="$DIR/pki/apiserver-etcd-client.crt" --etcd-keyfile="$DIR/pki/apiserver-etcd-client.key" \
    --tls-cert-file="$DIR/pki/apiserver.crt" --tls-private-key-file="$DIR/pki/apiserver.key" \
    --client-ca-file="$DIR/pki/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$DIR/pki/service-account.pub" \
    --service-account-signing-key-file="$DIR/pki/service-account.key" \
    --service-cluster-ip-range=127.0.99.0/24 --endpoint-reconciler-type=none \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --kubelet-client-certificate="$DIR/pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$DIR/pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$DIR/pki/ca.crt" --kubelet-preferred-address-types=Hostname \
    --profiling=false
  wait_for "containerd socket" 60 containerd ctr_ version
  binary_archive "$DIR/tmp/pause.tar" "$PAUSE_IMAGE" "$OWN/pause" 65535:65535
  ctr_ images import "$DIR/tmp/pause.tar" >/dev/null
  rm -f "$DIR/tmp/pause.tar"
  wait_for "ready API server" 120 kube-apiserver kctl get --raw /readyz
  local api=$((($(date +%s%N) - t0ns) / 1000000))
  start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$DIR/config/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$DIR/config/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$DIR/config/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$CM_PORT" --leader-elect=false \
    --use-service-account-credentials=true --root-ca-file="$DIR/pki/ca.crt" \
    --service-account-private-key-file="$DIR/pki/service-account.key" --profiling=false \
    --flex-volume-plugin-dir="$DIR/controller-manager/volume-plugins"
  start kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig="$DIR/config/scheduler.kubeconfig" \
    --authentication-kubeconfig="$DIR/config/scheduler.kubeconfig" \
    --authorization-kubeconfig="$DIR/config/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false --profiling=false
  start kubelet "$BIN/kubelet" --config="$DIR/config/kubelet.yaml" \
    --kubeconfig="$DIR/config/kubelet.kubeconfig" --root-dir="$DIR/kubelet" --cert-dir="$DIR/kubelet/pki" \
    --hostname-override=localhost
  # The namespace for codebridge, held to the "restricted" Pod Security
  # Standard, which its sandboxes meet.
  kctl create namespace "$NAMESPACE" >/dev/null
  kctl label namespace "$NAMESPACE" pod-security.kubernetes.io/enforce=restricted >/dev/null
  # Pods are refused until the namespace's default service account exists;
  # made here, it need not wait for the controller manager's (which then
  # finds it made).
  kctl -n "$NAMESPACE" create serviceaccount default --dry-run=client -o yaml | kctl apply -f - >/dev/null
  wait_for "Ready node" 120 kubelet node_ready
  local ready=$((($(date +%s%N) - t0ns) / 1000000))
  log "API server ready after $api ms, node Ready after $ready ms"
}

# ---- Images -----------------------------------------------------------------------

# load_images IMAGE...: copies each image from Podman into the cluster's
# containerd (pods use them with imagePullPolicy: Never). An image missing
# from Podman is built first by scripts/setup.sh; an image whose Podman ID
# has not changed since the last copy is not copied again.
load_images() {
  local img id stamp archive t0
  for img in "$@"; do
    command -v podman >/dev/null && id=$(podman image inspect --format '{{.Id}}' "$img" 2>/dev/null) || {
      log "$img is not in Podman: building it (scripts/setup.sh --image $img)"
      scripts/setup.sh --image "$img" >&2
      id=$(podman image inspect --format '{{.Id}}' "$img")
    }
    stamp=$DIR/images/$(printf '%s' "$img" | tr '/:' '__')
    if [ "$(cat "$stamp" 2>/dev/null)" = "$id" ]; then continue; fi
    log "copying $img (${id:0:12}) from Podman into the cluster"
    t0=$(date +%s%N)
    archive=$DIR/tmp/image.tar
    rm -f "$archive"
    # Uncompressed: compressing the layers only to unpack them again takes
    # minutes on a busy machine; seconds without.
    podman save --quiet --format oci-archive --uncompressed -o "$archive" "$img"
    ctr_ images import --index-name "$img" "$archive" >/dev/null
    rm -f "$archive"
    printf '%s' "$id" >"$stamp"
    log "copied $img in $((($(date +%s%N) - t0) / 1000000)) ms"
  done
}

# ---- Teardown ---------------------------------------------------------------------

# pids_in_cgroups: the processes in the cluster's cgroups (its pods').
pids_in_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/"$CGROUP" /sys/fs/cgroup/"$CGROUP"; do
    if [ -d "$d" ]; then find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null || true; fi
  done | sort -u
}
# shim_pids: the containerd shims started for the cluster's containerd (their
# command line names its socket).
shim_pids() {
  local f pid
  for f in $(grep -lsF -- "$DIR/containerd.sock" /proc/[0-9]*/cmdline); do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = containerd-shim ]; then echo "$pid"; fi
  done
}

down() {
  as_root_check down
  [ -d "$DIR" ] || { log "not running (no $DIR)"; return 0; }
  log "stopping the cluster in $DIR"
  local i pids d ids=()
  # The ids of its pod sandboxes and containers, for what they leave outside
  # the folder (before containerd, seeing them end, forgets them).
  for d in "$DIR"/containerd/root/io.containerd.grpc.v1.cri/{sandboxes,containers}/* \
    "$DIR"/containerd/state/io.containerd.runtime.v2.task/k8s.io/*; do
    if [ -d "$d" ]; then ids+=("${d##*/}"); fi
  done
  # The kubelet first, so that it restarts nothing, with the control plane
  # but etcd; then the pods' processes, containerd and the shims that ran them.
  stop kubelet kube-scheduler kube-controller-manager kube-apiserver
  for ((i = 0; i < 50; i++)); do
    pids=$(pids_in_cgroups)
    [ -z "$pids" ] && break
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
  stop containerd
  pids=$(shim_pids)
  # shellcheck disable=SC2086
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do [ -z "$(shim_pids)" ] && break; sleep 0.1; done
  stop etcd

  # Every mount under the folder (containers' root filesystems, the pods'
  # volumes and memory-backed emptyDirs, /dev/shm, network namespaces),
  # deepest first.
  local m
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done < <(awk -v d="$DIR" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
  # The cgroups: deepest first; a cgroup is removed with rmdir.
  for m in /sys/fs/cgroup/*/"$CGROUP" /sys/fs/cgroup/"$CGROUP"; do
    if [ -d "$m" ]; then find "$m" -depth -type d -exec rmdir {} + 2>/dev/null || log "could not remove cgroup $m"; fi
  done
  remove_outside "${ids[@]}"
  restore_sysctls
  rm -rf "$DIR"
  log "stopped; nothing of it is left"
}

# ---- Smoke check ------------------------------------------------------------------

# check runs a pod hardened as codebridge's sandboxes are (issue 25): user
# 65534, read-only root filesystem, no capabilities, no privilege escalation,
# seccomp RuntimeDefault, no service account token, limits, memory-backed
# emptyDirs for /tmp and /work, and a NetworkPolicy that denies all traffic;
# runs python3 in it with kubectl exec, and deletes both.
check() {
  healthy || die "not running: start it with $0 up"
  local image=${IMAGES%% *} name=codebridge-kube-check-$$ t0 out
  t0=$(date +%s%N)
  kctl apply -f - >/dev/null <<YAML
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: $name
  namespace: $NAMESPACE
spec:
  podSelector:
    matchLabels: {codebridge.io/check: "$name"}
  policyTypes: [Ingress, Egress]
---
apiVersion: v1
kind: Pod
metadata:
  name: $name
  namespace: $NAMESPACE
  labels: {codebridge.io/check: "$name"}
spec:
  automountServiceAccountToken: false
  enableServiceLinks: false
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  securityContext:
    runAsNonRoot: true
    runAsUser: 65534
    runAsGroup: 65534
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: sandbox
    image: $image
    imagePullPolicy: Never
    command: [python3, -c, "import signal, sys; signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); signal.pause()"]
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
    resources:
      limits: {cpu: "1", memory: 256Mi, ephemeral-storage: 64Mi}
      requests: {cpu: 100m, memory: 64Mi, ephemeral-storage: 64Mi}
    volumeMounts:
    - {name: tmp, mountPath: /tmp}
    - {name: work, mountPath: /work}
  volumes:
  - name: tmp
    emptyDir: {medium: Memory, sizeLimit: 64Mi}
  - name: work
    emptyDir: {medium: Memory, sizeLimit: 64Mi}
YAML
  trap 'kctl -n "$NAMESPACE" delete pod,networkpolicy "$name" --wait=false >/dev/null 2>&1 || true' EXIT
  if ! kctl -n "$NAMESPACE" wait --for=condition=Ready "pod/$name" --timeout=120s >/dev/null; then
    kctl -n "$NAMESPACE" describe pod "$name" >&2
    die "check: pod $name did not start"
  fi
  local running=$((($(date +%s%N) - t0) / 1000000)) t1
  t1=$(date +%s%N)
  out=$(kctl -n "$NAMESPACE" exec "$name" -- python3 -c 'print(1)')
  local exec_ms=$((($(date +%s%N) - t1) / 1000000))
  [ "$out" = 1 ] || die "check: python3 -c 'print(1)' printed $out"
  # What the hardening should give, seen from inside.
  out=$(kctl -n "$NAMESPACE" exec "$name" -- python3 -c '
import os, socket
assert os.getuid() == 65534 and os.getgid() == 65534, "not user 65534"
for path in ("/tmp/x", "/work/x"):
    open(path, "w").write("x")
try:
    open("/x", "w")
    raise SystemExit("root filesystem is writable")
except OSError:
    pass
assert open("/proc/self/status").read().count("CapEff:\t0000000000000000") == 1, "capabilities left"
assert "NoNewPrivs:\t1" in open("/proc/self/status").read(), "no_new_privs not set"
assert "Seccomp:\t2" in open("/proc/self/status").read(), "no seccomp filter"
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2)
    raise SystemExit("network reachable")
except OSError:
    pass
print("ok")
')
  [ "$out" = ok ] || die "check: hardening probe printed $out"
  kctl -n "$NAMESPACE" delete pod,networkpolicy "$name" --wait=true >/dev/null
  trap - EXIT
  log "check passed: hardened pod Running after $running ms, exec python3 -c 'print(1)' in $exec_ms ms, pod deleted"
}

# lock: one up, down or load at a time on this machine, whatever the cache
# folder (the lock is released when the script ends; its empty file stays in
# /run/lock, the place for such files, until the machine restarts).
lock() {
  local file=/run/lock/codebridge-kube.lock
  [ -d /run/lock ] || { mkdir -p "$CACHE" && file=$CACHE/lock; }
  exec 9>>"$file"
  flock 9
}

case ${1:-} in
  up) lock && up ;;
  down) lock && down ;;
  env) echo "export KUBECONFIG=$DIR/kubeconfig" ;;
  status)
    if healthy; then echo "running: KUBECONFIG=$DIR/kubeconfig"; else echo "not running"; exit 1; fi
    ;;
  check) check ;;
  load)
    shift
    lock
    healthy || die "not running: start it with $0 up"
    # shellcheck disable=SC2086
    [ $# -gt 0 ] || set -- $IMAGES
    load_images "$@"
    ;;
  kubectl)
    shift
    [ -f "$DIR/bin" ] || die "not running: start it with $0 up"
    BIN=$(cat "$DIR/bin")
    exec "$BIN/kubectl" --kubeconfig "$DIR/kubeconfig" "$@"
    ;;
  build) build_kube && echo "$BIN" ;;
  image)
    shift
    lock
    healthy || die "not running: start it with $0 up"
    codebridge_image "$@"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
