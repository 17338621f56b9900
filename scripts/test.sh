#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this script,
# under scripts/fresh.sh's brand-new-machine conditions).
# It installs what is missing first: Podman and the sandbox images (scripts/setup.sh,
# which is codebridge setup, builds the default one; the minimal one is built here)
# and the real MCP servers and client from npm that the integration tests drive.
# Extra arguments go to `go test` (e.g. scripts/test.sh -run TestExec ./bridge).
# Last, the end-to-end tests run again against Docker: a private dockerd
# (scripts/dockerd.sh, Debian's docker.io), the data image loaded into it from
# Podman and the minimal one built by codebridge setup --engine docker.
# CODEBRIDGE_TEST_DOCKER=0 leaves that phase out.
# Then the Kubernetes engine's tests and the end-to-end tests of sessions and
# attacks run against a real single-node cluster (scripts/kube.sh, stopped at
# the end). CODEBRIDGE_TEST_KUBERNETES=0 leaves that phase out.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'test: %s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

scripts/setup.sh
# The suite also runs the sandbox in the minimal image (python3 only), which
# users may choose instead of the default data image.
export CODEBRIDGE_TEST_MINIMAL_IMAGE=${CODEBRIDGE_TEST_MINIMAL_IMAGE:-localhost/codebridge-sandbox:minimal}
scripts/setup.sh --image "$CODEBRIDGE_TEST_MINIMAL_IMAGE"

# gVisor for the phase below that runs the sandbox under runsc
# (CODEBRIDGE_TEST_GVISOR=0 leaves it out): Debian's runsc, registered with
# Podman by codebridge setup --runtime runsc.
gvisor=${CODEBRIDGE_TEST_GVISOR:-1}
if [ "$gvisor" = 1 ]; then
  scripts/setup.sh --runtime runsc
fi

# An sshd for the test of remote Podman over ssh (it runs its own, on loopback,
# in inetd mode; the package's service is not used).
if ! command -v sshd >/dev/null && [ ! -x /usr/sbin/sshd ]; then
  log "installing openssh-server for the ssh test"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq openssh-server >/dev/null
fi

# A Secret Service for the keyring test (it starts gnome-keyring in a private
# D-Bus session of its own). Never dbus-x11: with it, keyring libraries
# autolaunch a bus and a daemon that stay behind.
if ! command -v gnome-keyring-daemon >/dev/null || ! command -v dbus-run-session >/dev/null || ! command -v dbus-send >/dev/null; then
  log "installing gnome-keyring and dbus for the keyring test"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
    gnome-keyring dbus dbus-daemon libsecret-tools >/dev/null
fi

# Debian's prometheus for the test that has a real Prometheus scrape /metrics
# (its own, on loopback; the package's service is not started).
scripts/prometheus.sh
# Headless Chromium for the dashboard's test in a real browser
# (TestDashboardInChromium drives it with chromedp).
if [ ! -x /usr/bin/chromium ]; then
  log "installing chromium for the dashboard's browser test"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# npm packages for the integration tests: the real MCP servers and clients,
# whole trees pinned by the lockfiles in scripts/npm (see scripts/npm.sh).
. scripts/npm.sh
npm_trees servers clients

# Jaeger, which the end-to-end test of traces sends spans to: built once from
# its Go module (scripts/jaeger.sh, a wrapper module in scripts/jaeger) and
# cached by version; the first build takes minutes.
eval "$(scripts/jaeger.sh env)"

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then log "gofmt would change: $unformatted"; exit 1; fi
log "go vet"
go vet ./...
log "go mod tidy -diff"
go mod tidy -diff
log "build without cgo or tags"
CGO_ENABLED=0 go build -o /dev/null ./...
log "release builds: linux and darwin on amd64 and arm64 (scripts/release.sh --check)"
scripts/release.sh --check
log "vet for macOS and Windows (go run ...@latest must build there too)"
for goos in darwin windows; do GOOS=$goos CGO_ENABLED=0 go vet ./...; done

# CODEBRIDGE_TEST_RACE=0 runs this part without the race detector.
race=-race
[ "${CODEBRIDGE_TEST_RACE:-1}" = 1 ] || race=
log "go test $race"
if [ $# -gt 0 ]; then
  exec go test $race -count=1 -timeout 30m "$@"
fi
go test $race -count=1 -timeout 30m ./...
# Every fuzz target (scripts/fuzz.sh finds them with go test -list), 4s
# each plus about 1.5s to start one: 24 targets took 85s at 2s each on 2
# cores with warm builds, so about 2.5 minutes at 4s, and under 4 with the
# fuzzing builds made fresh. The run above already replayed their seeds and
# testdata/fuzz. CODEBRIDGE_TEST_FUZZ=0 leaves this phase out;
# CODEBRIDGE_FUZZTIME sets the time per target.
if [ "${CODEBRIDGE_TEST_FUZZ:-1}" = 1 ]; then
  log "fuzz targets, ${CODEBRIDGE_FUZZTIME:-4s} each (CODEBRIDGE_TEST_FUZZ=0 leaves them out)"
  CODEBRIDGE_FUZZTIME=${CODEBRIDGE_FUZZTIME:-4s} scripts/fuzz.sh
fi
# End-to-end tests of what does not depend on the sandbox's image or engine
# (the lanes, metrics, tasks, the dashboard, traces): they ran above, and the
# image and engine passes below leave them out.
engine_free='TestToolsLaneHTTP|TestToolsLaneInspectorCLI|TestSearchLaneHTTP|TestPrometheusScrapesMetrics|TestHTTPTasks|TestDashboard|TestUICommand|TestTraceReachesJaeger'
# The MCP conformance suite's runs (docs/http.md#conformance) judge the
# protocol, which no image or engine changes.
engine_free="$engine_free|TestConformanceServer|TestConformanceToolsLane|TestConformanceTarget|TestConformanceClient"
# The end-to-end tests again with the minimal image as the sandbox (the data
# image's own test, which needs pandas, is skipped); -race ran above.
# CODEBRIDGE_TEST_MINIMAL=0 leaves this phase out.
if [ "${CODEBRIDGE_TEST_MINIMAL:-1}" = 1 ]; then
  log "end-to-end tests in the minimal image $CODEBRIDGE_TEST_MINIMAL_IMAGE"
  MCP_BRIDGE_IMAGE=$CODEBRIDGE_TEST_MINIMAL_IMAGE go test -count=1 -timeout 30m -skip "TestDataWorkEndToEnd|$engine_free" ./cmd/codebridge ./bridge/...
fi

# The sandbox under gVisor (MCP_BRIDGE_RUNTIME=runsc): the adversarial cases,
# the sessions tests, the seccomp probes (user namespaces and mounts still
# refused), doctor's proof of the kernel, and a syscall gVisor lacks.
gvisor_tests='TestAdversarial|TestSessionsThroughTypeScriptClient|TestIdleSessionExpires|TestSessionsOff|TestTwoSessionsOneServer|TestDoctor$|TestMissingSyscall'
if [ "$gvisor" = 1 ]; then
  log "the sandbox under gVisor (runsc): adversarial, sessions, seccomp probes, doctor"
  # Left out on Podman: the memory bomb. Under runsc the host's OOM killer
  # may take one of gVisor's helper processes instead of its kernel, which
  # Podman 4.3 then reports as a crash, not as out of memory
  # (docs/engines.md); Docker reports the cgroup's OOM, and runs it below.
  MCP_BRIDGE_RUNTIME=runsc go test -count=1 -timeout 30m \
    -run "$gvisor_tests" -skip 'TestAdversarial/memory_bomb' ./cmd/codebridge ./bridge
  MCP_BRIDGE_RUNTIME=runsc go test -count=1 -timeout 10m -run 'TestConformance/Seccomp$|TestPlaceSeccompProfile|TestConnectRuntime' ./runtime/podman
fi

# The end-to-end tests against Docker (MCP_BRIDGE_ENGINE=docker), on a private
# dockerd whose images are cached under ~/.cache/codebridge/dockerd, so a reused
# machine loads or builds them only when they change; the dockerd is stopped at
# the end, or when the script is interrupted.
if [ "${CODEBRIDGE_TEST_DOCKER:-1}" != 0 ]; then
  log "end-to-end tests against Docker (CODEBRIDGE_TEST_DOCKER=0 leaves them out)"
  if [ "$gvisor" = 1 ]; then
    eval "$(scripts/dockerd.sh start --runtime runsc)"
  else
    eval "$(scripts/dockerd.sh start)"
  fi
  trap 'scripts/dockerd.sh stop "$CODEBRIDGE_DOCKERD_RUN"' EXIT
  # The data image comes from Podman, which setup made current above: a
  # dockerd without it (a brand-new machine's) loads it in about 10 s, where
  # building it again from Debian packages takes minutes. setup below finds
  # it current (same inputs label) and leaves it; the minimal image is still
  # built by setup --engine docker, so that build stays under test.
  data_image=localhost/codebridge-sandbox:latest
  if [ "$(docker image inspect --format '{{.Id}}' "$data_image" 2>/dev/null)" != \
    "sha256:$(podman image inspect --format '{{.Id}}' "$data_image")" ]; then
    log "loading $data_image from Podman into the dockerd"
    podman save "$data_image" | docker load >/dev/null
    docker image prune --force >/dev/null # the one it replaced, if any
  fi
  go run ./cmd/codebridge setup --engine docker --yes
  go run ./cmd/codebridge setup --engine docker --yes --image "$CODEBRIDGE_TEST_MINIMAL_IMAGE"
  # One dockerd serves every codebridge here: 20 siblings closing at once,
  # not the 50 of the Podman phase.
  MCP_BRIDGE_ENGINE=docker CODEBRIDGE_TEST_SIBLINGS=${CODEBRIDGE_TEST_SIBLINGS:-20} \
    go test -count=1 -timeout 30m -skip "$engine_free" ./runtime/docker ./cmd/codebridge ./bridge/...
  # Docker under gVisor too: runsc is a runtime of the daemon, asked for per
  # container (HostConfig.Runtime). The conformance suite (hardening, the
  # seccomp probes), and the adversarial cases, sessions and doctor's proof
  # of the kernel, as on Podman, the memory bomb included.
  if [ "$gvisor" = 1 ]; then
    log "Docker under gVisor (runsc): conformance, seccomp probes, adversarial, sessions, doctor"
    MCP_BRIDGE_ENGINE=docker MCP_BRIDGE_RUNTIME=runsc go test -count=1 -timeout 30m \
      -run "TestConformance$|$gvisor_tests" ./runtime/docker ./cmd/codebridge ./bridge
  fi
  scripts/dockerd.sh stop "$CODEBRIDGE_DOCKERD_RUN"
  trap - EXIT
fi

# The Kubernetes engine (MCP_BRIDGE_ENGINE=kubernetes) on a real single-node
# cluster that scripts/kube.sh starts (its binaries cached by version in
# ~/.cache/codebridge/kube, the minimal image copied in from Podman) and stops
# at the end, or when the script is interrupted: runtime/kube's tests, and the
# end-to-end tests of sessions, attacks and leftovers with sandboxes as pods,
# of replicas sharing sessions by handle and of the shipped manifests,
# under codebridge's seccomp profile, which kube.sh puts on the node.
# Some also claim sandboxes from agent-sandbox's controller
# (scripts/agent-sandbox.sh: built once through the Go module proxy, cached).
if [ "${CODEBRIDGE_TEST_KUBERNETES:-1}" != 0 ]; then
  log "tests against Kubernetes (CODEBRIDGE_TEST_KUBERNETES=0 leaves them out)"
  trap 'scripts/agent-sandbox.sh down; scripts/kube.sh down' EXIT
  CODEBRIDGE_KUBE_IMAGES=$CODEBRIDGE_TEST_MINIMAL_IMAGE scripts/kube.sh up >/dev/null
  eval "$(scripts/kube.sh env)"
  export MCP_BRIDGE_ENGINE=kubernetes MCP_BRIDGE_IMAGE=$CODEBRIDGE_TEST_MINIMAL_IMAGE MCP_BRIDGE_K8S_SECCOMP_PROFILE=codebridge.json
  scripts/agent-sandbox.sh up
  export CODEBRIDGE_TEST_AGENT_SANDBOX=1 # its tests fail, not skip, without it
  go test -race -count=1 -timeout 30m ./runtime/kube/...
  go test -race -count=1 -timeout 30m ./cmd/codebridge \
    -run 'TestKubernetes|TestSessionsThroughTypeScriptClient|TestIdleSessionExpires|TestSessionsOff|TestNoContainersLeftBehind|TestAdversarial$|TestRunPythonEndToEnd|TestHTTPSessionByHandle|TestHTTPResumeAfterCut'
  unset MCP_BRIDGE_ENGINE MCP_BRIDGE_IMAGE MCP_BRIDGE_K8S_SECCOMP_PROFILE CODEBRIDGE_TEST_AGENT_SANDBOX
  scripts/agent-sandbox.sh down
  scripts/kube.sh down
  trap - EXIT
fi
