//go:build !windows

package pool

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// helperDef defines a stdio server that is this test binary (see TestMain).
// Every start appends the process's PID to pidFile, if it is not empty.
func helperDef(t *testing.T, name, pidFile string) *discovery.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A -race binary sleeps a second at exit unless told not to.
	env := map[string]string{"POOL_TEST_HELPER": "1", "GORACE": "atexit_sleep_ms=0"}
	if pidFile != "" {
		env["POOL_TEST_PIDFILE"] = pidFile
	}
	return &discovery.Server{Name: name, Source: "/etc/test.json", Transport: discovery.Stdio,
		Command: exe, Args: []string{"-test.run=^$"}, Env: env, Cwd: t.TempDir()}
}

func readPIDs(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func alive(pid int) bool {
	// A zombie still answers signal 0; the pool reaps its children, so a
	// zombie here would be a bug too.
	return syscall.Kill(pid, 0) == nil
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	testenv.Eventually(t, "process "+strconv.Itoa(pid)+" is gone", func() bool { return !alive(pid) })
}

func init() {
	notifyRelease = func(c chan<- os.Signal) { signal.Notify(c, syscall.SIGUSR1) }
}

// release ends one held step of the sleep tool in the helper process pid
// (see signalHolder): it sends SIGUSR1. It may be called from a progress
// callback.
func release(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Errorf("releasing helper %d: %v", pid, err)
	}
}

func callPID(t *testing.T, p *Pool, server string) int {
	t.Helper()
	res, err := p.Call(t.Context(), server, "pid", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(resultText(t, res))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestStdioServer(t *testing.T) {
	t.Setenv("POOL_TEST_SECRET", "must not leak")
	def := helperDef(t, "h", "")
	def.Env["FROM_CONFIG"] = "yes"
	p := newTestPool(t, Options{})
	p.Update([]*discovery.Server{def})

	pid := callPID(t, p, "h")
	st := statusOf(t, p, "h")
	if st.PID != pid || st.State != StateRunning {
		t.Errorf("status = %+v, want running with PID %d", st, pid)
	}
	for name, want := range map[string]string{
		"FROM_CONFIG":      "yes",
		"POOL_TEST_SECRET": "<unset>",
		"PATH":             os.Getenv("PATH"),
	} {
		res, err := p.Call(t.Context(), "h", "getenv", map[string]any{"name": name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != want {
			t.Errorf("server sees %s=%q, want %q", name, got, want)
		}
	}
	res, err := p.Call(t.Context(), "h", "getenv", map[string]any{"name": "PWD"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = res // PWD is a shell's; the working directory is checked via /proc below
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err == nil && cwd != def.Cwd {
		t.Errorf("server runs in %s, want %s", cwd, def.Cwd)
	}
	// Its own process group, so the pool can stop what it starts.
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("server's process group = %d (%v), want its own (%d)", pgid, err, pid)
	}
}

// TestConcurrentFirstUseOneProcess: ten callers at once, one process.
func TestConcurrentFirstUseOneProcess(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	p := newTestPool(t, Options{})
	p.Update([]*discovery.Server{helperDef(t, "h", pidFile)})
	start := make(chan struct{})
	pids := make(chan int, 10)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			<-start
			pids <- callPID(t, p, "h")
		})
	}
	close(start)
	wg.Wait()
	close(pids)
	started := readPIDs(t, pidFile)
	if len(started) != 1 {
		t.Fatalf("%d processes started (%v), want 1", len(started), started)
	}
	for pid := range pids {
		if pid != started[0] {
			t.Errorf("a call was served by PID %d, want %d", pid, started[0])
		}
	}
}

// TestKilledServerRestarts: a server killed from outside while idle is
// noticed at once (EOF on its stdout), so the next call starts a new process
// and succeeds. A call racing with the kill may fail (with ErrServerExited);
// the one after it succeeds.
func TestKilledServerRestarts(t *testing.T) {
	p := newTestPool(t, Options{})
	p.Update([]*discovery.Server{helperDef(t, "h", "")})
	pid := callPID(t, p, "h")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid) // the pool reaps it
	testenv.Eventually(t, "the pool notices", func() bool { return statusOf(t, p, "h").State == StateFailed })
	if st := statusOf(t, p, "h"); !strings.Contains(st.Err, "signal: killed") || !strings.Contains(st.Err, "helper pid") {
		t.Errorf("status error = %q, want the exit and the stderr tail", st.Err)
	}
	pid2 := callPID(t, p, "h")
	if pid2 == pid {
		t.Fatalf("same PID %d after kill", pid)
	}
	if !alive(pid2) {
		t.Errorf("new server %d not running", pid2)
	}
}

func TestCrashDuringCall(t *testing.T) {
	p := newTestPool(t, Options{})
	p.Update([]*discovery.Server{helperDef(t, "h", "")})
	pid := callPID(t, p, "h")
	_, err := p.Call(t.Context(), "h", "crash", nil, nil)
	if !errors.Is(err, ErrServerExited) || !strings.Contains(err.Error(), "fatal: simulated crash") {
		t.Fatalf("got %v, want ErrServerExited with the stderr tail", err)
	}
	t.Log(err)
	waitGone(t, pid)
	if pid2 := callPID(t, p, "h"); pid2 == pid {
		t.Errorf("same PID after crash")
	}
}

func TestStartFailures(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "bad-server.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'starting bad server' >&2\necho 'Error: GITHUB_TOKEN is not set' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	exitsLater := helperDef(t, "later", "")
	exitsLater.Env["POOL_TEST_EXIT_AFTER_START"] = "1"
	tests := []struct {
		name string
		def  *discovery.Server
		want []string // in the error
		tail bool
	}{
		{"script exits", &discovery.Server{Name: "script", Source: "/etc/x.json", Transport: discovery.Stdio, Command: script},
			[]string{`starting MCP server "script" (defined in /etc/x.json)`, "Error: GITHUB_TOKEN is not set", `check "command"`}, true},
		{"no such command", &discovery.Server{Name: "missing", Transport: discovery.Stdio, Command: "/nonexistent/mcp-server"},
			[]string{"no such file or directory", `check "command"`}, false},
		{"no command", &discovery.Server{Name: "empty", Transport: discovery.Stdio},
			[]string{`no "command" given`}, false},
		{"unknown transport", &discovery.Server{Name: "weird", Transport: "carrier-pigeon"},
			[]string{`unknown transport "carrier-pigeon"`}, false},
		{"exits during initialize", exitsLater, []string{"fatal: missing API key"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPool(t, Options{ConnectTimeout: time.Minute}) // they fail at once; a timeout would be a wrong answer
			p.Update([]*discovery.Server{tt.def})
			_, err := p.Tools(t.Context(), tt.def.Name)
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("got %v (%T), want *StartError", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if tt.tail && len(se.StderrTail) == 0 {
				t.Errorf("no stderr tail")
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a failing server was reported as a timeout: %v", err)
			}
			if st := statusOf(t, p, tt.def.Name); st.State != StateFailed {
				t.Errorf("state = %q, want failed", st.State)
			}
			t.Log(err)
		})
	}
}

func TestUpdateProcesses(t *testing.T) {
	defs := map[string]*discovery.Server{}
	var list []*discovery.Server
	for _, n := range []string{"keep", "change", "remove", "describe"} {
		defs[n] = helperDef(t, n, "")
		list = append(list, defs[n])
	}
	p := newTestPool(t, Options{})
	p.Update(list)
	pids := map[string]int{}
	for n := range defs {
		pids[n] = callPID(t, p, n)
	}

	// A call in flight on "change" while the update lands: held until the
	// checks below are done.
	done := make(chan error, 1)
	go func() {
		res, err := p.Call(t.Context(), "change", "sleep", map[string]any{"held": true}, nil)
		if err == nil && resultText(t, res) != "slept" {
			err = errors.New("wrong result")
		}
		done <- err
	}()
	waitInFlight(t, p, "change")

	changed := *defs["change"]
	changed.Env = map[string]string{"POOL_TEST_HELPER": "1", "GORACE": "atexit_sleep_ms=0", "VERSION": "2"}
	described := *defs["describe"]
	described.Description = "now with a description"
	p.Update([]*discovery.Server{defs["keep"], &changed, &described})

	if !alive(pids["change"]) {
		t.Errorf("changed server was stopped with a call in flight")
	}
	release(t, pids["change"])
	if err := <-done; err != nil {
		t.Fatalf("call in flight during Update: %v", err)
	}
	waitGone(t, pids["remove"])
	waitGone(t, pids["change"]) // once its call finished
	if _, err := p.Tools(t.Context(), "remove"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("removed server: %v", err)
	}
	if pid := callPID(t, p, "keep"); pid != pids["keep"] {
		t.Errorf("unchanged server restarted: PID %d, was %d", pid, pids["keep"])
	}
	if pid := callPID(t, p, "describe"); pid != pids["describe"] {
		t.Errorf("server whose description changed restarted: PID %d, was %d", pid, pids["describe"])
	}
	if st := statusOf(t, p, "describe"); st.Description != "now with a description" {
		t.Errorf("description = %q", st.Description)
	}
	if pid := callPID(t, p, "change"); pid == pids["change"] {
		t.Errorf("changed server kept its process")
	}
	res, err := p.Call(t.Context(), "change", "getenv", map[string]any{"name": "VERSION"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "2" {
		t.Errorf("changed server runs the old definition: VERSION=%q", got)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	p := New(Options{})
	var defs []*discovery.Server
	for _, n := range []string{"a", "b", "c"} {
		defs = append(defs, helperDef(t, n, pidFile))
	}
	p.Update(defs)
	running := map[string]int{}
	for _, d := range defs {
		running[d.Name] = callPID(t, p, d.Name)
	}
	// One request still in flight, held until Close has begun: Close waits
	// for it.
	done := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), "a", "sleep", map[string]any{"held": true}, nil)
		done <- err
	}()
	waitInFlight(t, p, "a")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard only
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- p.Close(ctx) }()
	testenv.Eventually(t, "Close begins", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.closed
	})
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with a call in flight", err)
	default:
	}
	release(t, running["a"])
	if err := <-done; err != nil {
		t.Errorf("call in flight during Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, pidFile)
	if len(pids) != 3 {
		t.Fatalf("started %v, want 3 processes", pids)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d still exists after Close", pid)
		}
	}
}

func TestCloseDeadlineKills(t *testing.T) {
	p := New(Options{})
	p.Update([]*discovery.Server{helperDef(t, "h", "")})
	pid := callPID(t, p, "h")
	done := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), "h", "sleep", map[string]any{"held": true}, nil) // never released
		done <- err
	}()
	waitInFlight(t, p, "h")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want deadline exceeded", err)
	}
	if err := <-done; err == nil {
		t.Errorf("call in flight survived a forced Close")
	}
	if alive(pid) {
		t.Errorf("process %d survived Close", pid)
	}
}

func TestIdleStopProcess(t *testing.T) {
	p := newTestPool(t, Options{IdleTimeout: 300 * time.Millisecond})
	p.Update([]*discovery.Server{helperDef(t, "h", "")})
	// A call longer than the idle timeout is not idle: stopping the server
	// under it would fail the call.
	if _, err := p.Call(t.Context(), "h", "sleep", map[string]any{"ms": 600}, nil); err != nil {
		t.Fatalf("a call longer than the idle timeout: %v", err)
	}
	pid := callPID(t, p, "h")
	waitGone(t, pid)
	if st := statusOf(t, p, "h"); st.State != StateConfigured || st.Err != "" {
		t.Errorf("after idle stop: %+v, want configured without error", st)
	}
	if pid2 := callPID(t, p, "h"); pid2 == pid {
		t.Errorf("same PID after idle stop")
	}
}

// TestProgressStdio checks routing over a real pipe. The steps are held until
// the notification before has been handled here, so all four arrive.
func TestProgressStdio(t *testing.T) {
	p := newTestPool(t, Options{})
	p.Update([]*discovery.Server{helperDef(t, "h", "")})
	pid := callPID(t, p, "h")
	var mu sync.Mutex
	var got []float64
	_, err := p.Call(t.Context(), "h", "sleep", map[string]any{"held": true, "steps": 4}, func(n *mcp.ProgressNotificationParams) {
		mu.Lock()
		got = append(got, n.Progress)
		mu.Unlock()
		release(t, pid)
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []float64{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("progress %v, want %v", got, want)
	}
}

// silentScript writes a server that writes a line to stderr, then its PID to
// pidFile, and never answers.
func silentScript(t *testing.T, pidFile string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "silent.sh")
	body := "#!/bin/sh\necho 'loading model...' >&2\necho $$ > " + pidFile + ".tmp\nmv " + pidFile + ".tmp " + pidFile + "\nexec sleep 60\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestConnectTimeoutKillsProcess: when the connect deadline passes, the
// server is killed and the error says why, with its stderr. The test decides
// when the deadline passes (after the server has started and written to
// stderr) rather than racing a short ConnectTimeout against the start of sh.
func TestConnectTimeoutKillsProcess(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := newTestPool(t, Options{})
	def := &discovery.Server{Name: "silent", Transport: discovery.Stdio, Command: silentScript(t, pidFile)}
	ctx := newManualDeadline(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := p.dial(ctx, def)
		errc <- err
	}()
	testenv.Eventually(t, "the server runs", func() bool { return len(readPIDs(t, pidFile)) == 1 })
	ctx.expire()
	err := <-errc
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a *StartError wrapping deadline exceeded", err)
	}
	if !strings.Contains(err.Error(), "loading model...") || !strings.Contains(err.Error(), "no answer to initialize within") {
		t.Errorf("error lacks the reason or the stderr tail: %v", err)
	}
	waitGone(t, readPIDs(t, pidFile)[0])
}

// manualDeadline is a context whose deadline passes when expire is called.
type manualDeadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newManualDeadline(parent context.Context) *manualDeadline {
	return &manualDeadline{Context: context.WithoutCancel(parent), done: make(chan struct{})}
}

func (c *manualDeadline) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *manualDeadline) Done() <-chan struct{}       { return c.done }
func (c *manualDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *manualDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestCloseDuringStart(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := New(Options{})
	p.Update([]*discovery.Server{{Name: "silent", Transport: discovery.Stdio, Command: silentScript(t, pidFile)}})
	errc := make(chan error, 1)
	go func() {
		_, err := p.Tools(t.Context(), "silent")
		errc <- err
	}()
	testenv.Eventually(t, "the server runs", func() bool { return len(readPIDs(t, pidFile)) == 1 })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard only
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Errorf("Tools succeeded on a server that never answers")
	}
	if pid := readPIDs(t, pidFile)[0]; alive(pid) {
		t.Errorf("process %d survived Close", pid)
	}
}

// TestChildDiesWithParent kills a process that uses a pool, as a crash or
// kill -9 of codebridge would, and checks its server does not outlive it,
// even a server that ignores the end of its stdin.
func TestChildDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has Pdeathsig")
	}
	parent, said := testenv.Child(t, "POOL_TEST_PARENT=1", "GORACE=atexit_sleep_ms=0")
	child, err := strconv.Atoi(said[0])
	if err != nil || !alive(child) {
		t.Fatalf("server PID %q: %v", said, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) }) // if the test fails
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	// The server is no child of ours: once killed it is reaped by init, and
	// signal 0 fails.
	waitGone(t, child)
}

// TestRetireThenExitDuringCall retires a server while a call is in flight on
// it, then its process dies while the call still waits: the conn drains,
// then exits on its own (the pool does not close it), the call fails with
// ErrServerExited, and its release closes nothing. In the racing case the
// call is released as the process is killed: whichever wins, the conn ends
// closed or exited, exactly once (an illegal transition panics).
func TestRetireThenExitDuringCall(t *testing.T) {
	tests := []struct {
		name   string
		finish bool // release the held call as the process is killed
	}{
		{"exit while held", false},
		{"exit racing the result", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPool(t, Options{})
			p.Update([]*discovery.Server{helperDef(t, "h", "")})
			pid := callPID(t, p, "h")
			errc := make(chan error, 1)
			go func() {
				_, err := p.Call(t.Context(), "h", "sleep", map[string]any{"held": true}, nil)
				errc <- err
			}()
			waitInFlight(t, p, "h")
			p.mu.Lock()
			c := p.servers["h"].cur
			p.mu.Unlock()

			p.Update([]*discovery.Server{}) // removes h: retired with a call in flight
			if st := c.getState(); st != connDraining {
				t.Fatalf("after retiring with a call in flight: %v, want draining", st)
			}
			if tt.finish {
				release(t, pid)
			}
			// Racing the result, the released call may let the draining conn
			// close, and so end the process, before this kill: then it is gone.
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !(tt.finish && errors.Is(err, syscall.ESRCH)) {
				t.Fatal(err)
			}
			err := <-errc
			<-c.done // watch has cleaned up after the session
			st := c.getState()
			switch {
			case !tt.finish && !errors.Is(err, ErrServerExited):
				t.Errorf("call when the server died: %v, want ErrServerExited", err)
			case !tt.finish && st != connExited:
				t.Errorf("state = %v, want exited", st)
			case !st.gone():
				t.Errorf("state = %v, want closed or exited", st)
			}
			if n := c.inFlight(); n != 0 {
				t.Errorf("%d requests in flight after the call returned", n)
			}
			p.mu.Lock()
			_, live := p.live[c]
			p.mu.Unlock()
			if live {
				t.Errorf("conn still live after its session ended")
			}
			waitGone(t, pid)
		})
	}
}
