package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// reportQuantiles adds the median and the 95th percentile of ds to b's
// results, in milliseconds: a run's wall time is skewed by the odd slow one,
// so these are the honest figures.
func reportQuantiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	p50, p95 := quantiles(ds)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p95, "p95-ms")
}

// quantiles returns the median and the 95th percentile of ds in
// milliseconds (0 for none), sorting ds.
func quantiles(ds []time.Duration) (p50, p95 float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return ms(ds[len(ds)/2]), ms(ds[min(len(ds)-1, len(ds)*95/100)])
}

// BenchmarkRunPythonPrint is run_python("print(1)") through a real MCP client
// and the built binary over stdio.
//
//   - live-session: calls back to back in the client's sandbox session (the
//     default): the code goes to an interpreter that is already running.
//     live-session/attach-stream is the same with the sandbox's stream
//     relayed by Podman (MCP_BRIDGE_SANDBOX_STREAM=attach) instead of a socket.
//     live-session/agent-paced is the same with 200 ms between calls (not
//     timed), as an agent's calls come: every thread on the way has gone to
//     sleep by the time the next call arrives.
//   - sessions-off/agent-paced and sessions-off/back-to-back: with
//     MCP_BRIDGE_SESSIONS=0 every call takes a fresh container; a second
//     between calls (a model thinking) lets the warm container be replaced,
//     back to back most calls wait for a container to start.
//
// Besides the latency, each reports codebridge's CPU time per run
// (bridge-cpu-us/run) and how often its threads waited (bridge-waits/run),
// pauses included: what an idle codebridge does between runs counts.
//
// Run it with:
//
//	go test ./cmd/codebridge -run '^$' -bench RunPythonPrint -benchtime 200x
func BenchmarkRunPythonPrint(b *testing.B) {
	b.Run("live-session", func(b *testing.B) { benchRunPrint(b, 0) })
	b.Run("live-session/attach-stream", func(b *testing.B) { benchRunPrint(b, 0, "MCP_BRIDGE_SANDBOX_STREAM=attach") })
	b.Run("live-session/agent-paced", func(b *testing.B) { benchRunPrint(b, 200*time.Millisecond) })
	b.Run("sessions-off/agent-paced", func(b *testing.B) { benchRunPrint(b, time.Second, "MCP_BRIDGE_SESSIONS=0") })
	b.Run("sessions-off/back-to-back", func(b *testing.B) { benchRunPrint(b, 0, "MCP_BRIDGE_SESSIONS=0") })
}

// BenchmarkRunPythonAfterIdle is print(1) in a live session after a pause
// past the idle trim (bridge/trim.go, 5 s), as after a model's turn: the run
// finds codebridge's heap given back, whose anonymous memory before each run
// it reports (bridge-anon-MB).
func BenchmarkRunPythonAfterIdle(b *testing.B) { benchRunPrint(b, 6*time.Second) }

func benchRunPrint(b *testing.B, pause time.Duration, env ...string) {
	requirePodman(b)
	// At the default level of logging (the tests' is debug: two more
	// lines and writes per run).
	cs, _, cmd := sessionProc(b, bridgeEnv(b, b.TempDir(), append([]string{"MCP_BRIDGE_LOG_LEVEL=info"}, env...)...))
	runPython(b, cs, map[string]any{"code": "print(1)"}) // first contact with Podman
	var ds []time.Duration
	var anon []float64
	cpu, waits := testenv.ProcessCPU(cmd.Process.Pid)
	for b.Loop() {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			anon = append(anon, float64(testenv.ProcessMemory(cmd.Process.Pid, "Pss_Anon"))/1e6)
			b.StartTimer()
		}
		start := time.Now()
		r := runPython(b, cs, map[string]any{"code": "print(1)"})
		ds = append(ds, time.Since(start))
		if r.IsError || r.Out.Stdout != "1\n" {
			b.Fatalf("unexpected result: %s", r.Text)
		}
	}
	cpu2, waits2 := testenv.ProcessCPU(cmd.Process.Pid)
	reportQuantiles(b, ds)
	b.ReportMetric(float64((cpu2-cpu).Microseconds())/float64(len(ds)), "bridge-cpu-us/run")
	b.ReportMetric(float64(waits2-waits)/float64(len(ds)), "bridge-waits/run")
	if len(anon) > 0 {
		slices.Sort(anon)
		b.ReportMetric(anon[len(anon)/2], "bridge-anon-MB")
	}
}

// BenchmarkFirstRunNewSession is the first run of a new session when a warm
// container is ready: each call passes reset=true, which ends the session and
// starts a new one, after a 3-second pause (not timed) for the warm container
// to be replaced and to import the preloaded modules. no-preload is the
// same with MCP_BRIDGE_PRELOAD empty.
func BenchmarkFirstRunNewSession(b *testing.B) {
	b.Run("preload", func(b *testing.B) { benchFirstRun(b, "print(1)", "1\n") })
	b.Run("no-preload", func(b *testing.B) { benchFirstRun(b, "print(1)", "1\n", "MCP_BRIDGE_PRELOAD=") })
}

// benchFirstRun times code as the first run of a new session, checking that
// it printed want.
func benchFirstRun(b *testing.B, code, want string, env ...string) {
	requirePodman(b)
	cs, _ := session(b, bridgeEnv(b, b.TempDir(), env...))
	runPython(b, cs, map[string]any{"code": "print(1)"})
	// Over stdio a container is started ahead only once a reset took the
	// session's (MCP_BRIDGE_WARM_CONTAINERS auto): this first reset, not
	// timed, starts the spare each timed one then finds.
	runPython(b, cs, map[string]any{"code": "print(1)", "reset": true})
	var ds []time.Duration
	for b.Loop() {
		b.StopTimer()
		time.Sleep(3 * time.Second)
		b.StartTimer()
		start := time.Now()
		r := runPython(b, cs, map[string]any{"code": code, "reset": true})
		ds = append(ds, time.Since(start))
		if r.IsError || r.Out.Stdout != want || r.Out.Session == nil || !r.Out.Session.New {
			b.Fatalf("unexpected result: %s", r.Text)
		}
	}
	reportQuantiles(b, ds)
}

// BenchmarkDataImport is run_python("import pandas, numpy, matplotlib.pyplot")
// in the default image, through a real MCP client:
//
//   - new-session: the first run of a new session (reset=true, a warm
//     container ready after a 3-second pause, not timed), whose interpreter
//     has imported them in the background (MCP_BRIDGE_PRELOAD).
//   - new-session-no-preload: the same with MCP_BRIDGE_PRELOAD empty: the
//     libraries are loaded from the image by the run.
//   - live-session: the same import again in a live session, where it is
//     already done.
//   - first-plot: a small figure drawn and returned as a PNG in a live
//     session.
//
// Run it with:
//
//	go test ./cmd/codebridge -run '^$' -bench DataImport -benchtime 20x
func BenchmarkDataImport(b *testing.B) {
	const code = "import pandas, numpy, matplotlib.pyplot"
	b.Run("new-session", func(b *testing.B) { benchFirstRun(b, code, "") })
	b.Run("new-session-no-preload", func(b *testing.B) { benchFirstRun(b, code, "", "MCP_BRIDGE_PRELOAD=") })
	b.Run("live-session", func(b *testing.B) { benchRunData(b, code, 0) })
	b.Run("first-plot", func(b *testing.B) {
		benchRunData(b, "plt = matplotlib.pyplot\nplt.plot([1, 2, 3]); plt.show()", 1)
	})
}

// benchRunData times code in a live session that has imported the data
// libraries, checking that each run returned that many images.
func benchRunData(b *testing.B, code string, images int) {
	requirePodman(b)
	cs, _ := session(b, bridgeEnv(b, b.TempDir()))
	runPython(b, cs, map[string]any{"code": "import pandas, numpy, matplotlib.pyplot"})
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		r := runPython(b, cs, map[string]any{"code": code})
		ds = append(ds, time.Since(start))
		if r.IsError || len(r.Attached) != images {
			b.Fatalf("unexpected result (%d attachments): %s", len(r.Attached), r.Text)
		}
	}
	reportQuantiles(b, ds)
}

// BenchmarkPodmanRunCLI is what the reference bridge pays per call: a fresh
// `podman run --rm` with the same hardening flags (and --runtime
// $MCP_BRIDGE_RUNTIME when set).
func BenchmarkPodmanRunCLI(b *testing.B) {
	requirePodman(b)
	var args []string
	if rt := testenv.Runtime(); rt != "" {
		args = []string{"--runtime", rt}
	}
	args = append(args, "run", "--rm", "-i", "--read-only", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--user", "65534:65534", "--memory", "512m", "--memory-swap", "512m",
		"--pids-limit", "128", "--tmpfs", "/tmp:rw,noexec,nosuid,nodev,size=64m", "--init",
		testenv.Image(), "python3", "-c", "print(1)")
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		out, err := exec.Command("podman", args...).CombinedOutput()
		ds = append(ds, time.Since(start))
		if err != nil || string(out) != "1\n" {
			b.Fatalf("podman run: %v: %s", err, out)
		}
	}
	reportQuantiles(b, ds)
}

// BenchmarkStartup100Servers is the time from launching codebridge to the answer
// to tools/list, with 100 servers configured (none starts: they are lazy).
func BenchmarkStartup100Servers(b *testing.B) {
	dir := b.TempDir()
	servers := map[string]any{}
	for i := range 100 {
		servers[fmt.Sprintf("server-%03d", i)] = map[string]any{"command": "/bin/false", "description": fmt.Sprintf("server number %d", i)}
	}
	writeServers(b, dir, "many.json", servers)
	env := bridgeEnv(b, dir, "MCP_BRIDGE_WARM_CONTAINERS=0")
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		cs, _ := session(b, env)
		if _, err := cs.ListTools(b.Context(), nil); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		cs.Close()
	}
	reportQuantiles(b, ds)
}

// BenchmarkToolCallFromSandbox is the cost of one tool call made by sandboxed
// code: 1,000 sequential echo calls to server-everything in one run, timed
// inside the sandbox; with the audit log (the default) and without it, with
// the sandbox's stream relayed by Podman instead of a socket, and through
// the server's proxy (mcp_everything.echo) instead of call_tool.
func BenchmarkToolCallFromSandbox(b *testing.B) {
	const callTool, proxy = `await call_tool("everything", "echo", {"message": "x"})`, `await mcp_everything.echo(message="x")`
	b.Run("audit", func(b *testing.B) { benchToolCall(b, callTool) })
	b.Run("no-audit", func(b *testing.B) { benchToolCall(b, callTool, "MCP_BRIDGE_AUDIT=0") })
	b.Run("attach-stream", func(b *testing.B) { benchToolCall(b, callTool, "MCP_BRIDGE_SANDBOX_STREAM=attach") })
	b.Run("proxy-no-audit", func(b *testing.B) { benchToolCall(b, proxy, "MCP_BRIDGE_AUDIT=0") })
}

// Besides the wall time per call (us/call), it reports per call the CPU
// time of the sandbox's Python (sandbox-cpu-us/call) and of codebridge
// (bridge-cpu-us/call, without the server's), and how often each waited
// (sandbox-waits/call, bridge-waits/call: voluntary context switches, each a
// thread going to sleep and being woken): figures that vary less with the
// machine's load than the wall time.
func benchToolCall(b *testing.B, call string, env ...string) {
	cs, cmd := everythingSession(b, env...)
	var perCall, sandboxCPU, bridgeCPU []time.Duration
	var sandboxWaits, bridgeWaits []float64
	for b.Loop() {
		cpu, waits := testenv.ProcessCPU(cmd.Process.Pid)
		out := mustRun(b, cs, testenv.PythonTimed(1000, call), "timeout", 120)
		cpu2, waits2 := testenv.ProcessCPU(cmd.Process.Pid)
		bridgeCPU = append(bridgeCPU, (cpu2-cpu)/1000)
		bridgeWaits = append(bridgeWaits, float64(waits2-waits)/1000)
		var us, cpuUS, w float64
		if _, err := fmt.Sscan(out, &us, &cpuUS, &w); err != nil {
			b.Fatalf("output %q", out)
		}
		perCall = append(perCall, time.Duration(us*1e3))
		sandboxCPU = append(sandboxCPU, time.Duration(cpuUS*1e3))
		sandboxWaits = append(sandboxWaits, w)
	}
	// What codebridge's heap grew to with the calls' garbage.
	b.ReportMetric(float64(testenv.ProcessMemory(cmd.Process.Pid, "Pss_Anon"))/1e6, "bridge-anon-MB")
	reportMedian(b, perCall, "us/call")
	reportMedian(b, sandboxCPU, "sandbox-cpu-us/call")
	reportMedian(b, bridgeCPU, "bridge-cpu-us/call")
	slices.Sort(sandboxWaits)
	slices.Sort(bridgeWaits)
	b.ReportMetric(sandboxWaits[len(sandboxWaits)/2], "sandbox-waits/call")
	b.ReportMetric(bridgeWaits[len(bridgeWaits)/2], "bridge-waits/call")
}

// reportMedian adds the median of ds, in microseconds, to b's results as unit.
func reportMedian(b *testing.B, ds []time.Duration, unit string) {
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, unit)
}

// BenchmarkToolCallNative is the same 1,000 echo calls from a go-sdk client
// talking to server-everything directly: the floor the bridge adds to.
func BenchmarkToolCallNative(b *testing.B) {
	cs := nativeEverything(b)
	var perCall []time.Duration
	for b.Loop() {
		perCall = append(perCall, nativeEcho(b, cs, 1000))
	}
	reportMedian(b, perCall, "us/call")
}

// everythingSession starts codebridge (with env) and a live session whose
// sandbox has called server-everything once.
func everythingSession(b *testing.B, env ...string) (*mcp.ClientSession, *exec.Cmd) {
	requirePodman(b)
	dir := b.TempDir()
	writeServers(b, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(b, "mcp-server-everything")}})
	cs, _, cmd := sessionProc(b, bridgeEnv(b, dir, append(env, "MCP_BRIDGE_LOG_LEVEL=info")...))
	mustRun(b, cs, `await call_tool("everything", "echo", {"message": "warm"})`)
	return cs, cmd
}

// nativeEverything is a go-sdk client of a server-everything of its own.
func nativeEverything(b *testing.B) *mcp.ClientSession {
	cmd := exec.Command(testenv.NPMBin(b, "mcp-server-everything"))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "native"}, nil).Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// nativeEcho makes n sequential echo calls through cs and returns the time
// per call.
func nativeEcho(b *testing.B, cs *mcp.ClientSession, n int) time.Duration {
	start := time.Now()
	for range n {
		if _, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}}); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

// BenchmarkToolCallGap is what a tool call from sandboxed code costs more
// than the same call from a native go-sdk client, measured in pairs so the
// machine's load, which moves both, cancels out: each iteration makes 200
// echo calls from code in a live session (no audit log, timed inside the
// sandbox) and 200 from a native client to a server-everything of its own,
// in turn, the order alternating. It reports the median of the pairs'
// differences (gap-us/call) and of each side.
func BenchmarkToolCallGap(b *testing.B) {
	cs, _ := everythingSession(b, "MCP_BRIDGE_AUDIT=0")
	toolCallGap(b, cs)
}

// gapCalls are the calls of each side of a pair of BenchmarkToolCallGap.
const gapCalls = 200

// toolCallGap is BenchmarkToolCallGap's pairs, the calls from code made
// in cs, whose sandbox has called server-everything.
func toolCallGap(b *testing.B, cs *mcp.ClientSession) {
	const calls = gapCalls
	native := nativeEverything(b)
	nativeEcho(b, native, calls) // both warm
	code := testenv.PythonTimed(calls, `await call_tool("everything", "echo", {"message": "x"})`)
	var gaps, fromCode, direct []time.Duration
	for i := 0; b.Loop(); i++ {
		var n time.Duration
		if i%2 == 1 {
			n = nativeEcho(b, native, calls)
		}
		var us float64
		out := mustRun(b, cs, code, "timeout", 120)
		if _, err := fmt.Sscan(out, &us); err != nil {
			b.Fatalf("output %q", out)
		}
		if i%2 == 0 {
			n = nativeEcho(b, native, calls)
		}
		c := time.Duration(us * 1e3)
		gaps, fromCode, direct = append(gaps, c-n), append(fromCode, c), append(direct, n)
	}
	reportMedian(b, gaps, "gap-us/call")
	reportMedian(b, fromCode, "sandbox-us/call")
	reportMedian(b, direct, "native-us/call")
}

// BenchmarkHTTP is run_python over the HTTP front (serve --http), through
// the go-sdk's streamable HTTP client with the bearer token:
//
//   - live-session: run_python("print(1)") back to back in one live session,
//     next to BenchmarkRunPythonPrint/live-session over stdio.
//   - 20-sessions: 20 sessions at once, each running 50 short runs back to
//     back (their first run, which starts the session's container, is done
//     before timing); runs/s is the throughput of all 1,000 runs, p50/p95
//     their latency; per run, the CPU time of codebridge
//     (bridge-cpu-us/run), how often its threads waited (bridge-waits/run)
//     and the CPU time of the 20 clients in the benchmark's own process
//     (client-cpu-us/run). Every run must succeed, and stopping codebridge
//     afterwards must leave no container (startHTTP's cleanup checks).
//
// Run it with:
//
//	go test ./cmd/codebridge -run '^$' -bench 'HTTP/live-session' -benchtime 200x
//	go test ./cmd/codebridge -run '^$' -bench 'HTTP/20-sessions' -benchtime 1x
func BenchmarkHTTP(b *testing.B) {
	b.Run("live-session", func(b *testing.B) {
		hb := startHTTP(b, bridgeEnv(b, b.TempDir()))
		cs := hb.goClient(b, hb.Token)
		runPython(b, cs, map[string]any{"code": "print(1)"})
		var ds []time.Duration
		for b.Loop() {
			start := time.Now()
			r := runPython(b, cs, map[string]any{"code": "print(1)"})
			ds = append(ds, time.Since(start))
			if r.IsError || r.Out.Stdout != "1\n" {
				b.Fatalf("unexpected result: %s", r.Text)
			}
		}
		reportQuantiles(b, ds)
	})
	b.Run("20-sessions", func(b *testing.B) {
		const sessions, runs = 20, 50
		// Room for every session and run at once; nothing preloaded, so 20
		// interpreters starting do not each import the data libraries.
		hb := startHTTP(b, bridgeEnv(b, b.TempDir(), "MCP_BRIDGE_MAX_SESSIONS=20", "MCP_BRIDGE_MAX_RUNS=20", "MCP_BRIDGE_PRELOAD="))
		css := make([]*mcp.ClientSession, sessions)
		for i := range css {
			css[i] = hb.goClient(b, hb.Token)
		}
		var wg sync.WaitGroup
		for _, cs := range css {
			wg.Go(func() { callPrint(cs) })
		}
		wg.Wait()
		var (
			mu   sync.Mutex
			ds   []time.Duration
			errs []error
		)
		var total, bridgeCPU, clientCPU time.Duration
		var bridgeWaits int
		for b.Loop() {
			cpu, waits := testenv.ProcessCPU(hb.Cmd.Process.Pid)
			own, _ := testenv.ProcessCPU(os.Getpid())
			start := time.Now()
			for _, cs := range css {
				wg.Go(func() {
					for range runs {
						t0 := time.Now()
						err := callPrint(cs)
						mu.Lock()
						ds = append(ds, time.Since(t0))
						if err != nil {
							errs = append(errs, err)
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			total += time.Since(start)
			cpu2, waits2 := testenv.ProcessCPU(hb.Cmd.Process.Pid)
			own2, _ := testenv.ProcessCPU(os.Getpid())
			bridgeCPU += cpu2 - cpu
			bridgeWaits += waits2 - waits
			clientCPU += own2 - own
		}
		if len(errs) > 0 {
			b.Fatalf("%d of %d runs failed; first: %v", len(errs), len(ds), errs[0])
		}
		b.ReportMetric(float64(len(ds))/total.Seconds(), "runs/s")
		reportQuantiles(b, ds)
		if n := len(ds); n > 0 && bridgeCPU > 0 {
			b.ReportMetric(float64(bridgeCPU.Microseconds())/float64(n), "bridge-cpu-us/run")
			b.ReportMetric(float64(bridgeWaits)/float64(n), "bridge-waits/run")
			b.ReportMetric(float64(clientCPU.Microseconds())/float64(n), "client-cpu-us/run")
		}
	})
}

// callPrint runs print(1) in cs and says what went wrong, if anything.
func callPrint(cs *mcp.ClientSession) error { return callCode(cs, "print(1)") }

// callCode runs code, which must print 1, in cs and says what went wrong, if
// anything.
func callCode(cs *mcp.ClientSession, code string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
	switch {
	case err != nil:
		return err
	case res.IsError || len(res.Content) == 0:
		return fmt.Errorf("run failed: %+v", res.Content)
	case res.Content[0].(*mcp.TextContent).Text != "1\n":
		return fmt.Errorf("output %q", res.Content[0].(*mcp.TextContent).Text)
	}
	return nil
}

// BenchmarkArgumentCheck is what the check of a run's tool calls before it
// runs (check_args) adds to a run of one proxy call in a live session: the
// code is parsed, and the tool's docs, fetched by the session's first run,
// are checked again. check-off is the same run with MCP_BRIDGE_CHECK_ARGS=0.
func BenchmarkArgumentCheck(b *testing.B) {
	b.Run("check", func(b *testing.B) { benchCheckedRun(b) })
	b.Run("check-off", func(b *testing.B) { benchCheckedRun(b, "MCP_BRIDGE_CHECK_ARGS=0") })
}

func benchCheckedRun(b *testing.B, env ...string) {
	cs, _ := everythingSession(b, env...)
	const code = "r = await mcp_everything.echo(message=\"x\")\nprint(1)"
	mustRun(b, cs, code) // the session's first: the docs are fetched
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		if out := mustRun(b, cs, code); out != "1\n" {
			b.Fatalf("output %q", out)
		}
		ds = append(ds, time.Since(start))
	}
	reportQuantiles(b, ds)
}
