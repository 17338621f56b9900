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
#   scripts/bench.sh runtimes the sandbox under each OCI runtime on Podman
#                             (RUNTIMES, default runc,runsc; runsc needs
#                             codebridge setup --runtime runsc), measured in
#                             turn on each iteration (BENCHTIME, default 20x):
#                             a container's start, a session's print(1) through
#                             an MCP client, podman run --rm, and a tool call
#                             from code (BenchmarkRuntimes; docs/engines.md).
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

bench() { # package, pattern, benchtime; a failure's reasons are kept
  go test "$1" -run '^$' -bench "$2" -benchtime "$3" -count 1 2>&1 | grep -E '^(Benchmark|ok|FAIL|---|    [a-z_]+_test\.go:)'
}

case "${1:-}" in
  tokens) tokens; exit ;;
  sessions) shift; sessions "$@"; exit ;;
  runtimes)
    npm_trees servers clients
    echo "## OCI runtimes ${RUNTIMES:-runc,runsc} on Podman, $(date -u +%Y-%m-%d), load:$(uptime | sed 's/.*load average://')"
    CODEBRIDGE_BENCH_RUNTIMES=${RUNTIMES:-runc,runsc} bench ./cmd/codebridge '^BenchmarkRuntimes$' "${BENCHTIME:-20x}"
    echo "## load after:$(uptime | sed 's/.*load average://')"
    exit ;;
  "") npm_trees servers clients ;;
  *) echo "usage: scripts/bench.sh [tokens | sessions [FLAGS] | runtimes]" >&2; exit 2 ;;
esac

echo "## run_python(\"print(1)\") through an MCP client: live session, sessions off; podman run --rm for comparison"
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
echo "## the protocol's and Python's share: a request answered at once by the host, over local pipes"
bench ./runtime/python 'RequestRoundTrip' 5x
bench ./runtime/python 'SessionRun' 200x
echo "## the start-up sweep: 1,000 containers a dead codebridge left (created, never started)"
CODEBRIDGE_BENCH_STALE=1000 bench ./runtime/podman 'RemoveStale' 1x
echo "## config folder: file written -> new configuration applied"
bench ./discovery 'ReloadLatency' 50x
echo "## downstream pool: echo call through the pool, server-everything start"
bench ./bridge/pool 'CallEcho|StartEverything' 5x
echo "## tool search over 10,000 tools"
bench ./discovery/search '.' 1s
echo "## soak: 200 calls on one codebridge, every tenth hostile: benign p50/p95, memory and open files before/after, containers"
bench ./cmd/codebridge 'Soak' 200x
