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
#   scripts/bench.sh lanes    what each lane's tools/list costs a client
#                             (docs/lanes.md): the same six servers, listed
#                             directly and through the code, tools and search
#                             lanes, tokens counted offline. It prints a table.
#   scripts/bench.sh search [FLAGS]
#                             tool search's quality and latency (docs/search.md):
#                             LiveMCPTool's 527 tools of 70 servers served as MCP
#                             servers behind a codebridge built from here, every
#                             golden query (discovery/search/testdata/golden) run
#                             through search_tool_docs in the sandbox. It installs
#                             what it needs, rewrites the table in docs/search.md
#                             and appends to docs/search.jsonl; FLAGS go to
#                             scripts/searchbench, e.g. -golden FILE,FILE.
#   scripts/bench.sh engines  per engine (Podman; Docker on a private dockerd that
#                             scripts/dockerd.sh starts and stops; Kubernetes on the
#                             single-node cluster of scripts/kube.sh, started and
#                             stopped unless it ran already): a container start, a
#                             new session's first run with a warm container, a
#                             session's print(1) through an MCP client, a tool call
#                             from code (docs/engines.md, docs/kubernetes.md).
#                             ENGINES="podman kubernetes" chooses some; RUNTIMES
#                             the OCI runtimes, e.g. RUNTIMES="default runsc"
#                             (default: the engine's own; runsc is gVisor, which
#                             codebridge setup --runtime runsc registers).
#   scripts/bench.sh sessions [FLAGS]
#                             how cost grows with live sessions (BenchmarkSessions,
#                             docs/performance.md), alone; FLAGS go to it, e.g.
#                             -sessions.http 1,10,100,1000.
#   scripts/bench.sh ab DIR_A DIR_B latency|memory [ROUNDS]
#                             an A/B of two checkouts of this repository (a
#                             tuning and its plain fallback, docs/performance.md
#                             "Tuning kept and removed"), in turn A B A B, ROUNDS
#                             rounds (5): latency is paced print(1) and
#                             BenchmarkToolCallGap, memory 100 stdio sessions
#                             idle 6 s (MB per session, runs/s).
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

# lanes prints what each lane's tools/list costs (scripts/tokenbench -lanes).
lanes() {
  npm_trees servers clients bench
  local bin
  bin=$(mktemp -d)
  trap "rm -rf '$bin'" EXIT
  go build -o "$bin/codebridge" ./cmd/codebridge
  go run ./scripts/tokenbench -lanes -npm "$CODEBRIDGE_TEST_NPM_DIR" -codebridge "$bin/codebridge"
}

# search runs scripts/searchbench with FLAGS against a codebridge built from
# this checkout.
search() {
  scripts/setup.sh >&2 # Podman and the sandbox (data) image, when missing
  local bin
  bin=$(mktemp -d)
  trap "rm -rf '$bin'" EXIT
  go build -o "$bin/codebridge" ./cmd/codebridge
  go build -o "$bin/searchbench" ./scripts/searchbench
  "$bin/searchbench" -codebridge "$bin/codebridge" -docs docs "$@"
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

# ab runs the figures of one kind from two checkouts in turn, each from its
# own folder (the test builds codebridge from there); compare the medians
# and the ratios round by round.
ab() {
  local a=$1 b=$2 kind=$3 rounds=${4:-5} r d
  for r in $(seq "$rounds"); do
    for d in "$a" "$b"; do
      echo "## $d, round $r, $(date -u '+%Y-%m-%d %H:%M'), load $(cut -d' ' -f1 /proc/loadavg)"
      case $kind in
        latency)
          (cd "$d" && bench ./cmd/codebridge 'RunPythonPrint/live-session/agent-paced' 60x &&
            bench ./cmd/codebridge 'ToolCallGap' 20x) ;;
        memory) (cd "$d" && sessions -sessions.http "" -sessions.data "" -sessions.stdio 100 -sessions.idle 6s) ;;
        *) echo "ab: latency or memory, not $kind" >&2; return 2 ;;
      esac
    done
  done
}

bench() { # package, pattern, benchtime; a failure's reasons are kept
  go test "$1" -run '^$' -bench "$2" -benchtime "$3" -count 1 2>&1 | grep -E '^(Benchmark|ok|FAIL|---|    [a-z_]+_test\.go:)'
}

# engines runs the same benchmarks on each engine of ENGINES, under each OCI
# runtime of RUNTIMES; Docker's is a private dockerd (its images cached, built
# by codebridge setup --engine docker when missing; with runsc registered when
# RUNTIMES names it), Kubernetes's the cluster of scripts/kube.sh with the
# minimal image and codebridge's seccomp profile; each is stopped at the end or
# on an interrupt (a cluster that ran before is left running).
engines() {
  npm_trees servers clients
  local engine pkg rt kube_was_up=0 runtimes=${RUNTIMES:-default}
  for engine in ${ENGINES:-podman docker kubernetes}; do
    pkg=./runtime/$engine
    case $engine in
      docker)
        case " $runtimes " in
          *" runsc "*) eval "$(scripts/dockerd.sh start --runtime runsc)" ;;
          *) eval "$(scripts/dockerd.sh start)" ;;
        esac
        trap 'scripts/dockerd.sh stop "$CODEBRIDGE_DOCKERD_RUN"' EXIT
        go run ./cmd/codebridge setup --engine docker --yes >&2
        ;;
      kubernetes)
        pkg=./runtime/kube
        scripts/kube.sh status >/dev/null 2>&1 && kube_was_up=1
        [ $kube_was_up = 1 ] || trap 'scripts/kube.sh down' EXIT
        CODEBRIDGE_KUBE_IMAGES=localhost/codebridge-sandbox:minimal scripts/kube.sh up >/dev/null
        eval "$(scripts/kube.sh env)"
        export MCP_BRIDGE_IMAGE=localhost/codebridge-sandbox:minimal MCP_BRIDGE_K8S_SECCOMP_PROFILE=codebridge.json
        ;;
    esac
    for rt in $runtimes; do
      if [ "$engine" = kubernetes ] && [ "$rt" != default ]; then
        echo "## $engine under $rt: skipped (the cluster of scripts/kube.sh has no runtime class for it)"
        continue
      fi
      local r=$rt
      [ "$rt" != default ] || r=
      echo "## $engine, OCI runtime $rt, $(date -u '+%Y-%m-%d %H:%M'), load:$(uptime | sed 's/.*load average://')"
      echo "## $engine/$rt: a container started until its Python answers print(1)"
      MCP_BRIDGE_ENGINE=$engine MCP_BRIDGE_RUNTIME=$r bench "$pkg" '^BenchmarkStart$' 20x
      echo "## $engine/$rt: a new session's first run, print(1), with a warm container ready"
      MCP_BRIDGE_ENGINE=$engine MCP_BRIDGE_RUNTIME=$r bench ./cmd/codebridge 'FirstRunNewSession/no-preload' 20x
      echo "## $engine/$rt: run_python(\"print(1)\") in a live session through an MCP client (socket; attach stream)"
      MCP_BRIDGE_ENGINE=$engine MCP_BRIDGE_RUNTIME=$r bench ./cmd/codebridge 'RunPythonPrint/live-session' 200x
echo "## the same after a 6 s pause, past the idle trim: codebridge's heap given back"
bench ./cmd/codebridge 'RunPythonAfterIdle' 8x
      echo "## $engine/$rt: one tool call from sandboxed code (1,000 echo calls to server-everything)"
      MCP_BRIDGE_ENGINE=$engine MCP_BRIDGE_RUNTIME=$r bench ./cmd/codebridge 'ToolCallFromSandbox/audit' 3x
    done
    case $engine in
      docker) scripts/dockerd.sh stop "$CODEBRIDGE_DOCKERD_RUN"; trap - EXIT ;;
      kubernetes)
        unset MCP_BRIDGE_IMAGE MCP_BRIDGE_K8S_SECCOMP_PROFILE
        [ $kube_was_up = 1 ] || { scripts/kube.sh down; trap - EXIT; }
        ;;
    esac
  done
}

case "${1:-}" in
  tokens) tokens; exit ;;
  lanes) lanes; exit ;;
  search) shift; search "$@"; exit ;;
  sessions) shift; sessions "$@"; exit ;;
  engines) engines; exit ;;
  ab) shift; npm_trees servers clients; ab "$@"; exit ;;
  "") npm_trees servers clients ;;
  *) echo "usage: scripts/bench.sh [tokens | lanes | search [FLAGS] | engines | sessions [FLAGS] | ab DIR_A DIR_B latency|memory [ROUNDS]]" >&2; exit 2 ;;
esac

echo "## run_python(\"print(1)\") through an MCP client: live session (back to back, and paced 200 ms apart), sessions off; podman run --rm for comparison"
bench ./cmd/codebridge 'RunPythonPrint/live-session' 200x
echo "## the same after a 6 s pause, past the idle trim: codebridge's heap given back"
bench ./cmd/codebridge 'RunPythonAfterIdle' 8x
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
bench ./cmd/codebridge 'ToolCall(FromSandbox|Native)' 3x
echo "## the same two measured in pairs, 200 calls each way in turn, so the machine's load cancels out: the gap per call"
bench ./cmd/codebridge 'ToolCallGap' 30x
echo "## one audit line (write under the folder lock, rotation check)"
bench ./bridge/audit 'Record' 20000x
echo "## the protocol's and Python's share over local pipes: a request answered at once by the host; print('ok') back to back and paced"
# With Debian's python3 where there is one (the sandbox image's, as in docs/performance.md),
# not whichever comes first on PATH (a pyenv build here, about a third slower).
if [ -z "${CODEBRIDGE_TEST_PYTHON:-}" ] && [ -x /usr/bin/python3 ]; then
  export CODEBRIDGE_TEST_PYTHON=/usr/bin/python3
fi
bench ./runtime/python 'RequestRoundTrip' 5x
bench ./runtime/python 'SessionRun' 200x
echo "## the machine's floor: a byte echoed by a Python process after it slept (this process spinning), and through a relay with every process asleep"
bench ./runtime/python 'WakeUp' 100x
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
