//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// Flags of BenchmarkSessions (after -args on the go test command line).
var (
	sessionsHTTP     = flag.String("sessions.http", "1,10,100", "BenchmarkSessions: counts of live minimal-image sessions over one serve --http (comma-separated, empty for none)")
	sessionsData     = flag.String("sessions.data", "1,10", "BenchmarkSessions: counts of live data-image sessions over one serve --http")
	sessionsStdio    = flag.String("sessions.stdio", "1,10,100", "BenchmarkSessions: counts of stdio codebridge processes, one session each")
	sessionsParallel = flag.Int("sessions.parallel", 4, "BenchmarkSessions: sessions started at once")
	sessionsJSON     = flag.String("sessions.json", "", "BenchmarkSessions: also append one JSON line per configuration to this file")
	sessionsImport   = flag.String("sessions.import", "pandas", "BenchmarkSessions: the module whose first import in data-image sessions is timed")
	sessionsIdle     = flag.Duration("sessions.idle", 0, "BenchmarkSessions: how long the sessions stay idle before their memory is measured (over 5s, codebridge has given its free heap back: bridge/trim.go)")
	sessionsPreload  = flag.String("sessions.preload", "default", "BenchmarkSessions: MCP_BRIDGE_PRELOAD for the data-image sessions (default: unset)")
	sessionsEnv      = flag.String("sessions.env", "", "BenchmarkSessions: more environment for codebridge only, as KEY=VALUE,KEY=VALUE (e.g. GOGC=200 to try a setting)")
)

// sessionFigures is what BenchmarkSessions measures for one configuration,
// also written as a JSON line.
type sessionFigures struct {
	Transport  string `json:"transport"` // http or stdio
	Image      string `json:"image"`     // minimal or data
	Preload    string `json:"preload"`   // MCP_BRIDGE_PRELOAD ("default" where unset)
	Sessions   int    `json:"sessions"`
	Containers int    `json:"containers"` // codebridge's containers with every session live (spares included)

	// Memory, MB (10^6 bytes) per session: the containers' cgroup usage (what
	// podman stats shows), conmon's proportional set size, and codebridge's
	// and its Podman API service's growth over HTTP (resident memory after
	// the sessions minus before, over the count) or their whole proportional
	// set size per process over stdio.
	ContainerMB     float64 `json:"container_mb"`
	ContainerAnonMB float64 `json:"container_anon_mb"` // of container_mb, what is not page cache (total_rss in memory.stat)
	ConmonMB        float64 `json:"conmon_mb"`
	CodebridgeMB    float64 `json:"codebridge_mb"`
	PodmanMB        float64 `json:"podman_mb"`
	TotalMB         float64 `json:"total_mb"`
	// What the machine lost, MB per session: MemAvailable before the
	// sessions minus after, over the count. Everything counted once, page
	// cache shared between containers included, but so is whatever else
	// the machine did meanwhile: a check on total_mb, noisy on a busy one.
	MachineMB float64 `json:"machine_mb"`

	// print(1) through a go-sdk client, ms: a session's first call, calls one
	// at a time across the live sessions, and every session calling at once.
	FirstP50   float64 `json:"first_p50_ms"`
	FirstP95   float64 `json:"first_p95_ms"`
	SeqP50     float64 `json:"seq_p50_ms"`
	SeqP95     float64 `json:"seq_p95_ms"`
	ConcP50    float64 `json:"concurrent_p50_ms"`
	ConcP95    float64 `json:"concurrent_p95_ms"`
	RunsPerSec float64 `json:"concurrent_runs_per_s"`
	// Every session calling print(1) back to back, all at once (at least
	// 500 calls a round, 3 rounds): runs a second held, and the CPU time a
	// run took, µs, by part: codebridge's processes, the sandboxes'
	// containers, this benchmark's clients, and the whole machine (the
	// rest of which is the kernel's work outside those, Podman and conmon).
	SustainedRunsPerSec float64 `json:"sustained_runs_per_s"`
	CPUCodebridgeUS     float64 `json:"cpu_codebridge_us_per_run"`
	CPUSandboxUS        float64 `json:"cpu_sandbox_us_per_run"`
	CPUClientUS         float64 `json:"cpu_client_us_per_run"`
	CPUMachineUS        float64 `json:"cpu_machine_us_per_run"`
	// The first import of a data library (-sessions.import) in up to 10
	// live data-image sessions, one at a time, after the memory is measured.
	Import     string  `json:"import,omitempty"`
	ImportP50  float64 `json:"import_p50_ms,omitempty"`
	ImportP95  float64 `json:"import_p95_ms,omitempty"`
	Failed     int     `json:"failed"` // calls that did not print 1
	FirstError string  `json:"first_error,omitempty"`

	StopS float64 `json:"stop_s"` // SIGTERM (http) or every client closing (stdio) until every codebridge exited
	GoneS float64 `json:"gone_s"` // the same until none of their containers was left (the engine removes them)
	Left  int     `json:"left"`   // containers of theirs still there 10 s after they exited (then removed by the benchmark)
	Load  string  `json:"load"`   // /proc/loadavg before the configuration
	Date  string  `json:"date"`
}

// BenchmarkSessions is how cost grows with live sessions: N go-sdk clients
// over one serve --http (minimal and data image) and N stdio codebridge
// processes, each session running print(1) first. For each it reports the
// memory per session by component, the first call's and sequential calls'
// p50/p95, and runs per second with every session calling at once (3
// rounds per b.Loop iteration). Every container it caused is gone when it
// returns, even when it fails; scripts/bench.sh sessions also ends what a
// killed benchmark left, from the pids named in $CODEBRIDGE_BENCH_PIDS.
//
//	go test ./cmd/codebridge -run '^$' -bench '^BenchmarkSessions$' -benchtime 1x -timeout 60m \
//	    -args -sessions.http 1,10,100,1000 -sessions.data 1,10 -sessions.stdio 1,10,100
func BenchmarkSessions(b *testing.B) {
	requirePodman(b)
	configs := []struct {
		transport, image, counts string
	}{
		{"http", "minimal", *sessionsHTTP},
		{"http", "data", *sessionsData},
		{"stdio", "minimal", *sessionsStdio},
	}
	for _, c := range configs {
		for _, s := range strings.Split(c.counts, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				b.Fatalf("session count %q: want a positive integer", s)
			}
			b.Run(fmt.Sprintf("%s/%s/n=%d", c.transport, c.image, n), func(b *testing.B) {
				f := &sessionFigures{Transport: c.transport, Image: c.image, Sessions: n, Load: loadavg(), Date: time.Now().UTC().Format(time.RFC3339)}
				image := testenv.MinimalImage()
				// The minimal image has nothing to preload: without it the
				// default bound on live sandboxes fits 1,000 of them.
				env := bridgeEnv(b, b.TempDir(), "MCP_BRIDGE_IMAGE="+image, "MCP_BRIDGE_PRELOAD=", "MCP_BRIDGE_LOG_LEVEL=info")
				if c.image == "data" {
					env = bridgeEnv(b, b.TempDir(), "MCP_BRIDGE_IMAGE="+testenv.Image(), "MCP_BRIDGE_LOG_LEVEL=info")
					f.Preload = *sessionsPreload
					if f.Preload != "default" {
						env = append(env, "MCP_BRIDGE_PRELOAD="+f.Preload)
					}
				}
				if *sessionsEnv != "" {
					env = append(env, strings.Split(*sessionsEnv, ",")...)
				}
				if c.transport == "http" {
					benchHTTPSessions(b, env, f)
				} else {
					benchStdioSessions(b, env, f)
				}
				reportSessions(b, f)
			})
		}
	}
}

// benchHTTPSessions measures f.Sessions go-sdk clients over one serve --http.
func benchHTTPSessions(b *testing.B, env []string, f *sessionFigures) {
	hb := startHTTP(b, env)
	hb.StopWait = 10 * time.Minute // a thousand sessions take a while to end
	// Its sandboxes exit in turns, four a second, once it has stopped.
	hb.GoneWait = time.Minute + time.Duration(f.Sessions+1)*enginekit.DefaultExitInterval
	pid := hb.Cmd.Process.Pid
	notePid(b, pid)
	var css []*mcp.ClientSession
	b.Cleanup(func() { // before startHTTP's, which only stops codebridge
		closeAll(css)
		hb.Stop(b)
		removeContainersOf(b, []int{pid})
	})
	// The warm container (MCP_BRIDGE_WARM_CONTAINERS auto) means Podman's
	// API service is up: measure from there.
	waitFor(func() bool { return len(containersOf(b, pid)) > 0 }, time.Minute)
	before := procsMem(pid, true)
	avail := memAvailable()

	css, first := startSessions(f.Sessions, func() (*mcp.ClientSession, error) { return hb.dial(hb.Token) })
	f.addErrors(first.errs)
	f.FirstP50, f.FirstP95 = quantiles(first.ds)

	ctrs := containersOfAll(b, []int{pid})
	ctrs.settle()
	time.Sleep(*sessionsIdle)
	after := procsMem(pid, true)
	f.MachineMB = float64(avail-memAvailable()) / 1e6 / float64(f.Sessions)
	f.CodebridgeMB = float64(after.codebridgeRSS-before.codebridgeRSS) / 1e6 / float64(f.Sessions)
	f.PodmanMB = float64(after.podmanPSS-before.podmanPSS) / 1e6 / float64(f.Sessions)
	f.measureMemory(ctrs)
	if f.Image == "data" {
		f.importFirst(css, *sessionsImport)
	}

	f.runCalls(b, css, []int{pid}, ctrs)

	start := time.Now()
	hb.Stop(b) // fails the benchmark if codebridge leaves a container
	f.StopS = hb.Exited.Seconds()
	f.waitGone(b, start, []int{pid})
}

// benchStdioSessions measures f.Sessions stdio codebridge processes, one
// go-sdk client each.
func benchStdioSessions(b *testing.B, env []string, f *sessionFigures) {
	bin := binary(b)
	var (
		mu   sync.Mutex
		pids []int
	)
	avail := memAvailable()
	css, first := startSessions(f.Sessions, func() (*mcp.ClientSession, error) {
		cs, _, cmd, err := connectStdio(bin, env, e2eClient(nil))
		if cmd.Process != nil {
			mu.Lock()
			pids = append(pids, cmd.Process.Pid)
			mu.Unlock()
			notePid(b, cmd.Process.Pid)
		}
		return cs, err
	})
	b.Cleanup(func() {
		closeAll(css)
		removeContainersOf(b, pids)
	})
	f.addErrors(first.errs)
	f.FirstP50, f.FirstP95 = quantiles(first.ds)

	ctrs := containersOfAll(b, pids)
	ctrs.settle()
	time.Sleep(*sessionsIdle)
	f.MachineMB = float64(avail-memAvailable()) / 1e6 / float64(f.Sessions)
	var cb, pm int64
	for _, pid := range pids {
		m := procsMem(pid, false)
		cb, pm = cb+m.codebridgePSS, pm+m.podmanPSS
	}
	f.CodebridgeMB = float64(cb) / 1e6 / float64(f.Sessions)
	f.PodmanMB = float64(pm) / 1e6 / float64(f.Sessions)
	f.measureMemory(ctrs)

	f.runCalls(b, css, pids, ctrs)

	// An editor quitting: every client closes at once.
	start := time.Now()
	closeAll(css)
	f.StopS = time.Since(start).Seconds()
	f.waitGone(b, start, pids)
}

// calls collects how long the calls that succeeded took and why the others
// failed, from any goroutine.
type calls struct {
	mu   sync.Mutex // protects following
	ds   []time.Duration
	errs []error
}

// time runs call and records its duration, or its error.
func (c *calls) time(call func() error) {
	start := time.Now()
	err := call()
	d := time.Since(start)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.errs = append(c.errs, err)
		return
	}
	c.ds = append(c.ds, d)
}

// waitGone waits up to 10 s for the containers of the codebridge processes
// pids, which have exited, to be gone, and notes when they were (counting
// from start) or how many were left.
func (f *sessionFigures) waitGone(b *testing.B, start time.Time, pids []int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.Left = len(containerIDs(b, pids))
		if f.Left == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if f.Left == 0 {
		f.GoneS = time.Since(start).Seconds()
	}
}

// startSessions connects n clients, sessionsParallel at a time, and times
// each one's first print(1). Clients that failed are nil.
func startSessions(n int, connect func() (*mcp.ClientSession, error)) ([]*mcp.ClientSession, *calls) {
	css := make([]*mcp.ClientSession, n)
	var (
		first calls
		wg    sync.WaitGroup
		sem   = make(chan struct{}, max(1, *sessionsParallel))
	)
	for i := range css {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cs, err := connect()
			if err != nil {
				first.time(func() error { return err })
				return
			}
			css[i] = cs
			first.time(func() error { return callPrint(cs) })
		})
	}
	wg.Wait()
	return css, &first
}

// runCalls times print(1) one call at a time round the live sessions (at
// least 100 calls), then with every session calling once at once, 3 rounds,
// then with every session calling back to back at once, 3 rounds, where it
// also measures the CPU a run takes in the processes of the codebridges
// pids and in their containers ctrs.
func (f *sessionFigures) runCalls(b *testing.B, css []*mcp.ClientSession, pids []int, ctrs containers) {
	var live []*mcp.ClientSession
	for _, cs := range css {
		if cs != nil {
			live = append(live, cs)
		}
	}
	if len(live) == 0 {
		b.Fatalf("no session started: %s", f.FirstError)
	}
	var (
		seq, conc, sus  calls
		wall, susWall   time.Duration
		cpuFrom, cpuTil cpuSample
	)
	// A round of sustained calls makes at least 2,000, and each session at
	// least 20, so that starting and draining the round weigh little: with
	// 500 and 5, the cores were idle an eighth of a round at 100 sessions
	// (docs/performance.md).
	perSession := max(20, (2000+len(live)-1)/len(live))
	for b.Loop() {
		for i := range max(100, len(live)) {
			seq.time(func() error { return callPrint(live[i%len(live)]) })
		}
		for range 3 {
			wall += allAtOnce(live, 1, &conc)
		}
		cpuFrom = sampleCPU(pids, ctrs)
		for range 3 {
			susWall += allAtOnce(live, perSession, &sus)
		}
		cpuTil = sampleCPU(pids, ctrs)
	}
	f.addErrors(seq.errs)
	f.addErrors(conc.errs)
	f.addErrors(sus.errs)
	f.SeqP50, f.SeqP95 = quantiles(seq.ds)
	f.ConcP50, f.ConcP95 = quantiles(conc.ds)
	f.RunsPerSec = float64(len(conc.ds)) / wall.Seconds()
	f.SustainedRunsPerSec = float64(len(sus.ds)) / susWall.Seconds()
	if runs := float64(len(sus.ds) + len(sus.errs)); runs > 0 {
		perRun := func(from, til time.Duration) float64 { return float64((til - from).Microseconds()) / runs }
		f.CPUCodebridgeUS = perRun(cpuFrom.codebridge, cpuTil.codebridge)
		f.CPUSandboxUS = perRun(cpuFrom.sandboxes, cpuTil.sandboxes)
		f.CPUClientUS = perRun(cpuFrom.client, cpuTil.client)
		f.CPUMachineUS = perRun(cpuFrom.machine, cpuTil.machine)
	}
}

// allAtOnce has every session of live call print(1) n times back to back,
// all starting at once, into c, and returns how long they took together.
func allAtOnce(live []*mcp.ClientSession, n int, c *calls) time.Duration {
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for _, cs := range live {
		wg.Go(func() {
			<-gate
			for range n {
				c.time(func() error { return callPrint(cs) })
			}
		})
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	return time.Since(start)
}

// cpuSample is the CPU time used so far by the parts of a run's path.
type cpuSample struct {
	codebridge, sandboxes, client, machine time.Duration
}

// sampleCPU reads the CPU time of the codebridge processes pids, of their
// containers ctrs, of this process (the benchmark's clients), and of the
// whole machine (busy time in /proc/stat, in ticks of 10 ms).
func sampleCPU(pids []int, ctrs containers) cpuSample {
	var s cpuSample
	for _, pid := range pids {
		cpu, _ := testenv.ProcessCPU(pid)
		s.codebridge += cpu
	}
	s.sandboxes = time.Duration(ctrs.cpu())
	s.client, _ = testenv.ProcessCPU(os.Getpid())
	raw, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(raw), "\n")
	if fields := strings.Fields(line); len(fields) > 7 && fields[0] == "cpu" {
		for _, i := range []int{1, 2, 3, 6, 7} { // user, nice, system, irq, softirq
			ticks, _ := strconv.ParseInt(fields[i], 10, 64)
			s.machine += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return s
}

// importFirst times the first import of module in up to 10 sessions, one
// at a time.
func (f *sessionFigures) importFirst(css []*mcp.ClientSession, module string) {
	f.Import = module
	var imports calls
	for _, cs := range css[:min(10, len(css))] {
		if cs != nil {
			imports.time(func() error { return callCode(cs, "import "+module+"\nprint(1)") })
		}
	}
	f.addErrors(imports.errs)
	f.ImportP50, f.ImportP95 = quantiles(imports.ds)
}

func (f *sessionFigures) addErrors(errs []error) {
	if len(errs) > 0 && f.FirstError == "" {
		f.FirstError = errs[0].Error()
	}
	f.Failed += len(errs)
}

// containers are the containers of some codebridge processes, as the
// benchmark found them once every session was live.
type containers struct {
	cgroups []string // cgroup paths below a controller's folder
	conmons []int
}

// containerIDs lists the containers of the codebridge processes pids (their
// owner label), with one podman ps for all.
func containerIDs(b *testing.B, pids []int) []string {
	host, _ := os.Hostname()
	owners := map[string]bool{}
	for _, pid := range pids {
		owners[host+"/"+strconv.Itoa(pid)] = true
	}
	out, err := exec.Command("podman", "ps", "-a", "--filter", "label="+confine.LabelManaged+"=true",
		"--format", `{{.ID}} {{index .Labels "`+confine.LabelOwner+`"}}`).Output()
	if err != nil {
		b.Fatalf("podman ps: %v", err)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if id, owner, _ := strings.Cut(line, " "); owners[owner] {
			ids = append(ids, id)
		}
	}
	return ids
}

// containersOfAll lists the containers of the codebridge processes pids.
func containersOfAll(b *testing.B, pids []int) containers {
	ids := containerIDs(b, pids)
	var c containers
	if len(ids) == 0 {
		return c
	}
	out, err := exec.Command("podman", append([]string{"inspect", "--format", "{{.State.CgroupPath}} {{.State.ConmonPid}}"}, ids...)...).Output()
	if err != nil {
		b.Fatalf("podman inspect: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		cgroup, conmon, _ := strings.Cut(line, " ")
		c.cgroups = append(c.cgroups, cgroup)
		if p, err := strconv.Atoi(conmon); err == nil && p > 0 {
			c.conmons = append(c.conmons, p)
		}
	}
	return c
}

// usage is the containers' memory use in bytes, as podman stats shows it
// (the cgroup's usage, page cache included).
func (c containers) usage() int64 { return c.sum("memory", "memory.usage_in_bytes") }

// cpu is the CPU time the containers have used, in ns.
func (c containers) cpu() int64 { return c.sum("cpuacct", "cpuacct.usage") }

// sum adds up a number the containers' cgroups (cgroup v1) show in file.
func (c containers) sum(controller, file string) int64 {
	var sum int64
	for _, cg := range c.cgroups {
		if raw, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", controller, cg, file)); err == nil {
			n, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
			sum += n
		}
	}
	return sum
}

// anon is the containers' memory that is not page cache, in bytes: what
// no other container can share.
func (c containers) anon() int64 {
	var sum int64
	for _, dir := range c.cgroups {
		raw, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", dir, "memory.stat"))
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "total_rss "); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				sum += n
			}
		}
	}
	return sum
}

// settle waits until the containers are idle (at most 3 minutes): less
// than 50 ms of CPU between them in a second, and their memory grown by
// less than 1%. A session's interpreter may still be importing its
// preloaded modules after its first run, slowly on a loaded machine.
func (c containers) settle() {
	mem, cpu := c.usage(), c.cpu()
	for range 180 {
		time.Sleep(time.Second)
		mem1, cpu1 := c.usage(), c.cpu()
		if cpu1-cpu < 50e6 && mem1-mem < mem/100 {
			return
		}
		mem, cpu = mem1, cpu1
	}
}

// measureMemory adds the containers' memory and their conmons' per session.
func (f *sessionFigures) measureMemory(c containers) {
	var conmon int64
	for _, p := range c.conmons {
		conmon += pss(p)
	}
	n := float64(f.Sessions)
	f.Containers = len(c.cgroups)
	f.ContainerMB, f.ConmonMB = float64(c.usage())/1e6/n, float64(conmon)/1e6/n
	f.ContainerAnonMB = float64(c.anon()) / 1e6 / n
	f.TotalMB = f.ContainerMB + f.ConmonMB + f.CodebridgeMB + f.PodmanMB
}

// procMemory is a codebridge process's memory and its Podman API service's
// (the `podman system service` it started, if any), in bytes.
type procMemory struct {
	codebridgeRSS, codebridgePSS, podmanPSS int64
}

func procsMem(pid int, withRSS bool) procMemory {
	m := procMemory{codebridgePSS: pss(pid)}
	if withRSS {
		m.codebridgeRSS = testenv.ProcessMemory(pid, "Rss")
	}
	for _, child := range descendants(pid) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child)); strings.TrimSpace(string(comm)) == "podman" {
			m.podmanPSS += pss(child)
		}
	}
	return m
}

// pss is a process's proportional set size in bytes (0 if it is gone): its
// resident pages, each shared one divided among the processes sharing it, so
// that many processes of one binary add up to what they really take.
func pss(pid int) int64 { return testenv.ProcessMemory(pid, "Pss") }

func reportSessions(b *testing.B, f *sessionFigures) {
	for _, m := range []struct {
		v    float64
		unit string
	}{
		{f.TotalMB, "MB/session"}, {f.MachineMB, "machine-MB"}, {f.ContainerMB, "container-MB"}, {f.ContainerAnonMB, "container-anon-MB"},
		{f.ConmonMB, "conmon-MB"},
		{f.CodebridgeMB, "codebridge-MB"}, {f.PodmanMB, "podman-MB"}, {float64(f.Containers), "containers"},
		{f.FirstP50, "first-p50-ms"}, {f.FirstP95, "first-p95-ms"}, {f.SeqP50, "seq-p50-ms"}, {f.SeqP95, "seq-p95-ms"},
		{f.ConcP50, "conc-p50-ms"}, {f.ConcP95, "conc-p95-ms"}, {f.RunsPerSec, "runs/s"},
		{f.SustainedRunsPerSec, "sustained-runs/s"}, {f.CPUCodebridgeUS, "codebridge-cpu-us/run"},
		{f.CPUSandboxUS, "sandbox-cpu-us/run"}, {f.CPUClientUS, "client-cpu-us/run"}, {f.CPUMachineUS, "machine-cpu-us/run"},
		{f.ImportP50, "import-p50-ms"}, {f.ImportP95, "import-p95-ms"}, {float64(f.Failed), "failed"}, {f.StopS, "stop-s"}, {f.GoneS, "gone-s"}, {float64(f.Left), "left"},
	} {
		b.ReportMetric(m.v, m.unit)
	}
	line, _ := json.Marshal(f)
	fmt.Printf("%s\n", line)
	if f.FirstError != "" {
		b.Logf("%d calls failed; first: %s", f.Failed, f.FirstError)
	}
	if *sessionsJSON == "" {
		return
	}
	file, err := os.OpenFile(*sessionsJSON, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	if _, err := fmt.Fprintf(file, "%s\n", line); err != nil {
		b.Fatal(err)
	}
}

// closeAll closes every session at once and waits for them (for stdio, for
// their codebridge to exit).
func closeAll(css []*mcp.ClientSession) {
	var wg sync.WaitGroup
	for _, cs := range css {
		if cs != nil {
			wg.Go(func() { cs.Close() })
		}
	}
	wg.Wait()
}

// removeContainersOf removes what the codebridge processes pids left (their
// owner label names them): the benchmark's own containers only, after
// those processes have exited or been killed.
func removeContainersOf(b *testing.B, pids []int) {
	for _, pid := range pids {
		if processAlive(pid) && isCodebridge(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	ids := containerIDs(b, pids)
	if len(ids) == 0 {
		return
	}
	if out, err := exec.Command("podman", append([]string{"rm", "-f", "-t", "0"}, ids...)...).CombinedOutput(); err != nil {
		b.Errorf("removing the %d containers codebridge left: %v: %s", len(ids), err, out)
	}
}

func isCodebridge(pid int) bool {
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(comm)) == "codebridge"
}

// notePid appends pid to the file $CODEBRIDGE_BENCH_PIDS names, if any, so
// that scripts/bench.sh can end a codebridge (and remove its containers)
// that a killed benchmark left.
func notePid(b *testing.B, pid int) {
	path := os.Getenv("CODEBRIDGE_BENCH_PIDS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = fmt.Fprintln(f, pid)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		b.Errorf("noting pid %d in %s: %v", pid, path, err)
	}
}

// waitFor polls cond until it holds or d has passed.
func waitFor(cond func() bool, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// memAvailable is the machine's MemAvailable (/proc/meminfo), in bytes.
func memAvailable() int64 {
	raw, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func loadavg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
