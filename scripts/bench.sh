#!/usr/bin/env bash
# The benchmarks behind the figures in the docs.
#
#   scripts/bench.sh          the Go benchmarks behind docs/performance.md. They
#                             need what scripts/test.sh installs (Podman, the
#                             sandbox image); run that once first.
#   scripts/bench.sh tokens   what one code tool saves an agent (docs/benchmark.md):
#                             eight tasks over six real npm servers, done directly
#                             and through codebridge, tokens counted offline. It
#                             installs what it needs and rewrites docs/benchmark.*.
#   scripts/bench.sh kubernetes
#                             the same three benchmarks on Podman and on a
#                             single-node Kubernetes that scripts/kube.sh starts
#                             and stops: a new session's first run with a warm
#                             container or pod, print(1) in a live session, a tool
#                             call from code (docs/kubernetes.md).
#   scripts/bench.sh sessions [FLAGS]
#                             how cost grows with live sessions (BenchmarkSessions,
#                             docs/performance.md), alone; FLAGS go to it, e.g.
#                             -sessions.http 1,10,100,1000.
#
# Figures vary with the machine's load: run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/npm.sh

tokens() {
  scripts/setup.sh >&2 # Podman and the sandbox (data) image, when missing
  npm_trees servers clients bench
  local bin
  bin=$(mktemp -d)
  trap "rm -rf '$bin'" EXIT
  go build -o "$bin/codebridge" ./cmd/codebridge
  go run ./scripts/tokenbench -npm "$CODEBRIDGE_TEST_NPM_DIR" -codebridge "$bin/codebridge" -docs docs
}

# sessions runs BenchmarkSessions with FLAGS: -sessions.http, -sessions.data and
# -sessions.stdio take the counts (default 1,10,100; 1,10 for data), -sessions.json FILE
# also appends its JSON lines there. Whatever ends the benchmark, the codebridge processes
# it started are ended and their containers (by owner label) removed.
sessions() {
  pids=$(mktemp)
  trap end_sessions EXIT
  CODEBRIDGE_BENCH_PIDS=$pids go test ./cmd/codebridge -run '^$' -bench '^BenchmarkSessions$' -benchtime 1x \
    -count 1 -timeout 60m -args "$@" 2>&1 | grep -E '^(Benchmark|ok|FAIL|---|\{|    )'
}

end_sessions() {
  local pid owners=""
  while read -r pid; do
    if [ -e "/proc/$pid" ]; then # still ours if it has our environment, else leave it alone
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "CODEBRIDGE_BENCH_PIDS=$pids" || continue
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 300); do [ -e "/proc/$pid" ] || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    owners+=" $(hostname)/$pid "
  done <"$pids"
  rm -f "$pids"
  # One podman ps for all: their containers by owner label.
  podman ps -a --filter label=io.codebridge.managed=true --format '{{.ID}} {{index .Labels "io.codebridge.owner"}}' |
    while read -r id owner; do
      case "$owners" in *" $owner "*) podman rm -f -t 0 "$id" >/dev/null || true ;; esac
    done
}

# kubernetes runs three benchmarks on each engine with the minimal image; the
# cluster is stopped at the end, or when the script is interrupted.
kubernetes() {
  npm_trees servers clients
  local image=localhost/codebridge-sandbox:minimal engine
  scripts/setup.sh --image "$image" >&2
  trap 'scripts/kube.sh down' EXIT
  CODEBRIDGE_KUBE_IMAGES=$image scripts/kube.sh up >/dev/null
  eval "$(scripts/kube.sh env)"
  for engine in podman kubernetes; do
    for b in 'FirstRunNewSession/no-preload 20x' 'RunPythonPrint/live-session 200x' 'ToolCallFromSandbox/audit 3x'; do
      echo "## $engine: ${b% *}"
      MCP_BRIDGE_IMAGE=$image MCP_BRIDGE_ENGINE=$engine MCP_BRIDGE_K8S_SECCOMP_PROFILE=codebridge.json \
        go test ./cmd/codebridge -run '^$' -bench "${b% *}" -benchtime "${b#* }" -count 1 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)'
    done
  done
  scripts/kube.sh down
  trap - EXIT
}

case "${1:-}" in
  tokens) tokens; exit ;;
  kubernetes) kubernetes; exit ;;
  sessions) shift; sessions "$@"; exit ;;
  "") npm_trees servers clients ;;
  *) echo "usage: scripts/bench.sh [tokens | kubernetes | sessions [FLAGS]]" >&2; exit 2 ;;
esac

bench() { # package, pattern, benchtime
  go test "$1" -run '^$' -bench "$2" -benchtime "$3" -count 1 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)'
}

echo "## run_python(\"print(1)\") through an MCP client: live session (back to back, and paced 200 ms apart), sessions off; podman run --rm for comparison"
bench ./cmd/codebridge 'RunPythonPrint/live-session' 200x
bench ./cmd/codebridge 'RunPythonPrint/sessions-off|PodmanRunCLI' 20x
echo "## the same with Podman reached over ssh (a loopback sshd the benchmark starts)"
bench ./cmd/codebridge 'SSH' 100x
echo "## the same over HTTP (serve --http): one live session; 20 sessions at once x 50 runs each (throughput, p50/p95)"
bench ./cmd/codebridge 'HTTP/live-session' 200x
bench ./cmd/codebridge 'HTTP/20-sessions' 1x
echo "## first run of a new session, a warm container ready (with and without MCP_BRIDGE_PRELOAD)"
bench ./cmd/codebridge 'FirstRunNewSession' 20x
echo "## import pandas, numpy, matplotlib: first run of a new session (preloaded or not), live session; a plot returned"
bench ./cmd/codebridge 'DataImport' 15x
echo "## the first search_tool_docs of a new codebridge, 3 and 30 servers, with and without saved tool lists"
bench ./cmd/codebridge 'FirstSearch' 5x
echo "## start codebridge and answer tools/list with 100 servers configured"
bench ./cmd/codebridge 'Startup100Servers' 10x
echo "## one tool call from sandboxed code vs from a native go-sdk client (1,000 sequential echo calls)"
bench ./cmd/codebridge 'ToolCall' 3x
echo "## one audit line (write under the folder lock, rotation check)"
bench ./bridge/audit 'Record' 20000x
echo "## the protocol's and Python's share over local pipes: a request answered at once by the host; print('ok') back to back and paced"
bench ./runtime/python 'RequestRoundTrip' 5x
bench ./runtime/python 'SessionRun' 200x
echo "## the start-up sweep: 1,000 containers a dead codebridge left (created, never started)"
CODEBRIDGE_BENCH_STALE=1000 bench ./runtime/podman 'RemoveStale' 1x
echo "## 200 sandboxes of one codebridge ending together: in turns, then all at once as before (cleanup processes, load)"
CODEBRIDGE_BENCH_EXIT=200 go test ./runtime/podman -run '^$' -bench 'MassExit' -benchtime 1x -count 1 -v 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)|massexit'
CODEBRIDGE_BENCH_EXIT=200 CODEBRIDGE_BENCH_EXIT_AT_ONCE=1 go test ./runtime/podman -run '^$' -bench 'MassExit' -benchtime 1x -count 1 -v 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)|massexit'
echo "## config folder: file written -> new configuration applied"
bench ./discovery 'ReloadLatency' 50x
echo "## downstream pool: echo call through the pool, server-everything start"
bench ./bridge/pool 'CallEcho|StartEverything' 5x
echo "## tool search over 10,000 tools"
bench ./discovery/search '.' 1s
echo "## soak: 200 calls on one codebridge, every tenth hostile: benign p50/p95, memory and open files before/after, containers"
bench ./cmd/codebridge 'Soak' 200x
