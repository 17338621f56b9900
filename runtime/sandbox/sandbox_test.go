// The fake engine runs the bootstrap as a local python3 process and stands in
// for container deaths with Unix signals.

//go:build unix

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// fakeEngine starts "containers" that are python3 processes on this host
// running the real bootstrap: sessions, timeouts and crashes are exercised
// for real, in milliseconds and without Podman.
type fakeEngine struct {
	t       testing.TB
	python  string // the host's python3
	started atomic.Int64
	fail    atomic.Bool // Start fails while set
	// preparing, when set before the first Start, is the progress line every
	// Start reports to its caller's Wait, as if it waited 1 ms for it.
	preparing string

	mu   sync.Mutex
	live map[*fakeContainer]bool
}

func newFakeEngine(t testing.TB) *fakeEngine {
	t.Helper()
	e := &fakeEngine{t: t, python: testenv.Python(t), live: map[*fakeContainer]bool{}}
	t.Cleanup(func() {
		if n := e.running(); n != 0 {
			t.Errorf("%d fake containers left running", n)
		}
	})
	return e
}

func (e *fakeEngine) Start(ctx context.Context, w Wait) (Container, error) {
	if e.fail.Load() {
		return nil, errors.New("podman is not installed")
	}
	if e.preparing != "" && w.Progress != nil {
		w.Progress(e.preparing)
	}
	if e.preparing != "" && w.Waited != nil {
		w.Waited(time.Millisecond)
	}
	argv := python.Command()
	cmd := exec.Command(e.python, argv[1:]...)
	cmd.Env = testenv.PythonEnv
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &fakeContainer{e: e, cmd: cmd, stdin: stdin, stdout: stdout, started: time.Now(), done: make(chan struct{}), id: "fake" + strconv.FormatInt(e.started.Add(1), 10)}
	go func() { c.state, c.waitErr = cmd.Process.Wait(); close(c.done) }()
	e.mu.Lock()
	e.live[c] = true
	e.mu.Unlock()
	return c, nil
}

// signal sends sig to every running fake container.
func (e *fakeEngine) signal(sig syscall.Signal) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for c := range e.live {
		c.cmd.Process.Signal(sig)
	}
}

func (e *fakeEngine) running() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.live)
}

type fakeContainer struct {
	e       *fakeEngine
	id      string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  io.ReadCloser
	started time.Time
	done    chan struct{}
	state   *os.ProcessState
	waitErr error
	once    sync.Once
}

func (c *fakeContainer) ID() string            { return c.id }
func (c *fakeContainer) Started() time.Time    { return c.started }
func (c *fakeContainer) Done() <-chan struct{} { return c.done }
func (c *fakeContainer) Stderr() string        { return "" }
func (c *fakeContainer) Stream() io.ReadWriteCloser {
	return fakeStream{c}
}

func (c *fakeContainer) Exit(ctx context.Context) (int, bool, error) {
	select {
	case <-c.done:
	case <-ctx.Done():
		return -1, false, ctx.Err()
	}
	if ws, ok := c.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal() == syscall.SIGKILL, nil // SIGKILL stands in for the OOM killer
	}
	return c.state.ExitCode(), false, nil
}

func (c *fakeContainer) Remove(ctx context.Context) error {
	c.once.Do(func() {
		c.stdin.Close()
		c.cmd.Process.Signal(syscall.SIGTERM)
		c.cmd.Process.Signal(syscall.SIGCONT) // a stopped process ends only when continued
		<-c.done
		c.e.mu.Lock()
		delete(c.e.live, c)
		c.e.mu.Unlock()
	})
	return nil
}

type fakeStream struct{ c *fakeContainer }

func (s fakeStream) Read(p []byte) (int, error)  { return s.c.stdout.Read(p) }
func (s fakeStream) Write(p []byte) (int, error) { return s.c.stdin.Write(p) }
func (s fakeStream) Close() error {
	s.c.stdin.Close()
	s.c.cmd.Process.Kill()
	return nil
}

func newManager(t testing.TB, eng Engine, opts Options) *Manager {
	t.Helper()
	opts.Sessions = true
	m := New(eng, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func run(t testing.TB, m *Manager, session, code string, timeout time.Duration) *Result {
	t.Helper()
	res, err := m.Run(t.Context(), Request{Session: session, Program: python.Program{Code: code}, Timeout: timeout})
	if err != nil {
		t.Fatalf("Run(%q): %v", code, err)
	}
	return res
}

func TestSessionKeepsState(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{})
	r1 := run(t, m, "a", "x = 41", time.Minute)
	r2 := run(t, m, "a", "print(x + 1)", time.Minute)
	if r2.Stdout != "42\n" || r2.Error != nil {
		t.Fatalf("second run = %q %+v", r2.Stdout, r2.Error)
	}
	if !r1.Session.New || r1.Session.Reason != ReasonFirst || r2.Session.New || r2.Session.ID != r1.Session.ID || r2.Session.Run != 2 {
		t.Errorf("sessions: %+v then %+v", r1.Session, r2.Session)
	}
	// Another session sees none of it.
	r3 := run(t, m, "b", "print('x' in globals())", time.Minute)
	if r3.Stdout != "False\n" || r3.Session.ID == r1.Session.ID {
		t.Errorf("session b: %q %+v", r3.Stdout, r3.Session)
	}
	// reset starts fresh, and says so.
	r4, err := m.Run(t.Context(), Request{Session: "a", Reset: true, Program: python.Program{Code: "print(x)"}, Timeout: time.Minute})
	if err != nil || r4.Error == nil || r4.Error.Type != "NameError" || !r4.Session.New || r4.Session.Reason != ReasonReset {
		t.Errorf("after reset: %+v, %+v, %v", r4.Error, r4.Session, err)
	}
	if n := eng.running(); n != 2 {
		t.Errorf("%d containers running, want one per session", n)
	}
}

func TestRunsOfOneSessionTakeTurns(t *testing.T) {
	m := newManager(t, newFakeEngine(t), Options{})
	run(t, m, "a", "import threading\nlog = []\nlock = threading.Lock()", time.Minute)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			// Each run appends twice with a pause between: interleaving would show.
			run(t, m, "a", "import time\nlog.append("+strconv.Itoa(i)+")\ntime.sleep(0.01)\nlog.append("+strconv.Itoa(i)+")", time.Minute)
		})
	}
	wg.Wait()
	res := run(t, m, "a", "print(all(log[i] == log[i+1] for i in range(0, len(log), 2)), len(log))", time.Minute)
	if res.Stdout != "True 10\n" {
		t.Errorf("runs interleaved: %q", res.Stdout)
	}
}

// TestWaitingRunCancelled: a client that cancels a run still waiting for its
// turn leaves the queue; the others go on.
func TestWaitingRunCancelled(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{})
	run(t, m, "a", "import threading\ngo = threading.Event()", time.Minute)
	first := make(chan *Result)
	mark, started := running(t)
	go func() { first <- run(t, m, "a", mark+"go.wait()\nprint('first')", time.Minute) }()
	s, _ := m.session(t.Context(), Request{Session: "a"})
	started()
	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan error)
	go func() {
		_, err := m.Run(ctx, Request{Session: "a", Program: python.Program{Code: "print('never')"}, Timeout: time.Minute})
		waiting <- err
	}()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiters) == 1 })
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiting run: %v", err)
	}
	s.mu.Lock()
	n := len(s.waiters)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("%d runs still waiting after cancel", n)
	}
	eng.signal(syscall.SIGINT) // end the first run
	if res := <-first; res.Error == nil || res.Error.Type != "KeyboardInterrupt" || res.Stdout != "" {
		t.Errorf("first run: %q %+v", res.Stdout, res.Error)
	}
	if r := run(t, m, "a", "print('after')", time.Minute); r.Stdout != "after\n" {
		t.Errorf("next run: %q %+v", r.Stdout, r.Error)
	}
}

// TestTimeoutKeepsOrEndsSession: code that stops when interrupted at its
// time limit keeps its session; code that does not is killed with its
// session, and the next run is told why its state is gone.
func TestTimeoutKeepsOrEndsSession(t *testing.T) {
	t.Run("interrupted", func(t *testing.T) {
		// A grace far beyond what python3 needs to raise KeyboardInterrupt
		// on a loaded machine: the run returns as soon as the code stops.
		m := newManager(t, newFakeEngine(t), Options{Limits: python.Limits{InterruptGrace: time.Minute}})
		first := run(t, m, "a", "x = 1", time.Minute)
		// Whether the interrupt lands before the code starts or in it, the
		// run ends interrupted.
		res := run(t, m, "a", "import time\nwhile True: time.sleep(1)", 100*time.Millisecond)
		if res.Error == nil || res.Error.Kind != protocol.FailTimeout || res.Session.Ended != "" {
			t.Fatalf("interruptible timeout: %+v %+v", res.Error, res.Session)
		}
		if r := run(t, m, "a", "print(x)", time.Minute); r.Stdout != "1\n" || r.Session.ID != first.Session.ID {
			t.Errorf("after an interrupted run: %q %+v", r.Stdout, r.Session)
		}
	})
	t.Run("stuck", func(t *testing.T) {
		eng := newFakeEngine(t)
		m := newManager(t, eng, Options{Limits: python.Limits{InterruptGrace: 100 * time.Millisecond}})
		first := run(t, m, "a", "x = 1", time.Minute)
		// A stopped process answers no interrupt, however long it is given.
		eng.signal(syscall.SIGSTOP)
		res := run(t, m, "a", "print('never')", 100*time.Millisecond)
		if res.Error == nil || res.Error.Kind != protocol.FailTimeout || res.Session.Ended != ReasonTimeout {
			t.Fatalf("stuck code: %+v %+v", res.Error, res.Session)
		}
		waitFor(t, func() bool { return eng.running() == 0 }) // removed in the background
		r := run(t, m, "a", "print('x' in globals())", time.Minute)
		if r.Stdout != "False\n" || !r.Session.New || r.Session.Reason != ReasonTimeout || r.Session.ID == first.Session.ID {
			t.Errorf("run after the kill: %q %+v", r.Stdout, r.Session)
		}
	})
}

func TestCrashEndsSession(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{Memory: 64 << 20})
	run(t, m, "a", "x = 1", time.Minute)
	res := run(t, m, "a", "import os, signal\nprint('bye', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)", time.Minute)
	if res.Error == nil || res.Error.Kind != protocol.FailOOM || res.Session.Ended != ReasonOOM {
		t.Fatalf("killed: %+v %+v %q", res.Error, res.Session, res.Stdout)
	}
	if !strings.Contains(res.Error.Message, "64 MiB") {
		t.Errorf("message %q does not name the limit", res.Error.Message)
	}
	res = run(t, m, "a", "import os\nos._exit(3)", time.Minute)
	if res.Error == nil || res.Error.Kind != protocol.FailExit || res.ExitCode != 3 || res.Session.Ended != ReasonCrash || res.Session.Reason != ReasonOOM {
		t.Errorf("os._exit(3): %+v exit %d %+v", res.Error, res.ExitCode, res.Session)
	}
	if r := run(t, m, "a", "print(1)", time.Minute); r.Stdout != "1\n" || r.Session.Reason != ReasonCrash {
		t.Errorf("after a crash: %q %+v", r.Stdout, r.Session)
	}
}

func TestIdleSessionEnds(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{IdleTimeout: 50 * time.Millisecond})
	run(t, m, "a", "x = 1", time.Minute)
	waitFor(t, func() bool { return eng.running() == 0 })
	r := run(t, m, "a", "print('x' in globals())", time.Minute)
	if r.Stdout != "False\n" || r.Session.Reason != ReasonIdle {
		t.Errorf("after idle expiry: %q %+v", r.Stdout, r.Session)
	}
}

func TestMaxSessionsEvictsIdlest(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{MaxSessions: 2})
	run(t, m, "a", "x = 'a'", time.Minute)
	run(t, m, "b", "x = 'b'", time.Minute)
	run(t, m, "a", "pass", time.Minute) // b is now the idlest
	run(t, m, "c", "x = 'c'", time.Minute)
	if n := m.Sessions(); n != 2 {
		t.Errorf("%d live sessions, want 2", n)
	}
	if r := run(t, m, "a", "print(x)", time.Minute); r.Stdout != "a\n" {
		t.Errorf("a lost its state: %q %+v", r.Stdout, r.Session)
	}
	if r := run(t, m, "b", "print('x' in globals())", time.Minute); r.Stdout != "False\n" || r.Session.Reason != ReasonEvicted {
		t.Errorf("b: %q %+v", r.Stdout, r.Session)
	}
}

// TestEvictionSparesRunningSession: at the bound, the session used least
// recently is not ended while it runs code: the idle one is, and says so.
func TestEvictionSparesRunningSession(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{MaxSessions: 2})
	run(t, m, "a", "import threading\ngo = threading.Event()", time.Minute) // a is used first
	run(t, m, "b", "x = 'b'", time.Minute)
	done := make(chan *Result)
	mark, started := running(t)
	go func() { done <- run(t, m, "a", mark+"go.wait(60)\nprint('a ran on')", time.Minute) }()
	started()
	if r := run(t, m, "c", "print('c')", time.Minute); r.Stdout != "c\n" || r.Error != nil {
		t.Fatalf("a third session at the bound: %q %+v", r.Stdout, r.Error)
	}
	if n := m.Sessions(); n != 2 {
		t.Errorf("%d live sessions, want 2", n)
	}
	m.mu.Lock()
	a := m.sessions["a"]
	m.mu.Unlock()
	a.mu.Lock()
	aLive := a.state == stateLive
	a.mu.Unlock()
	if !aLive {
		t.Error("the running session a was ended to make room")
	}
	if r := run(t, m, "b", "print('x' in globals())", time.Minute); r.Stdout != "False\n" || r.Session.Reason != ReasonEvicted {
		t.Errorf("b after eviction: %q %+v", r.Stdout, r.Session)
	}
	eng.signal(syscall.SIGINT)
	<-done
}

func TestAllSessionsBusy(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{MaxSessions: 1})
	run(t, m, "a", "import threading\ngo = threading.Event()", time.Minute)
	done := make(chan *Result)
	mark, started := running(t)
	go func() { done <- run(t, m, "a", mark+"go.wait(60)", time.Minute) }()
	started()
	r := run(t, m, "b", "print(1)", time.Minute)
	var limit *SessionLimitError
	if r.Error == nil || r.Error.Kind != protocol.FailUnavailable || !errors.As(r.Cause, &limit) || *limit != (SessionLimitError{Limit: 1, Busy: true}) ||
		r.Error.Message != limit.Error() {
		t.Errorf("with every session busy: %+v, cause %#v", r.Error, r.Cause)
	}
	eng.signal(syscall.SIGINT)
	<-done
}

func TestOneShotWithoutSessions(t *testing.T) {
	eng := newFakeEngine(t)
	m := New(eng, Options{Sessions: false})
	defer m.Close(context.Background())
	run(t, m, "a", "x = 1", time.Minute)
	r := run(t, m, "a", "print('x' in globals())", time.Minute)
	if r.Stdout != "False\n" || r.Session.Reason != ReasonOneShot {
		t.Errorf("without sessions: %q %+v", r.Stdout, r.Session)
	}
	if n := eng.running(); n != 0 {
		t.Errorf("%d containers after one-shot runs", n)
	}
}

func TestWarmContainerUsed(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{Warm: 1})
	m.Warm(t.Context())
	if n := eng.started.Load(); n != 1 {
		t.Fatalf("%d started after Warm, want 1", n)
	}
	run(t, m, "a", "print(1)", time.Minute)
	waitFor(t, func() bool { return eng.started.Load() == 2 && eng.running() == 2 }) // one session, one new warm
	eng.fail.Store(true)
	if r := run(t, m, "b", "print(2)", time.Minute); r.Stdout != "2\n" {
		t.Errorf("run on the warm container: %q %+v", r.Stdout, r.Error)
	}
	if r := run(t, m, "c", "print(3)", time.Minute); r.Error == nil || r.Error.Kind != protocol.FailUnavailable || !strings.Contains(r.Error.Message, "podman is not installed") {
		t.Errorf("with no container to be had: %+v", r.Error)
	}
}

func TestEndRemovesSession(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{})
	run(t, m, "a", "x = 1", time.Minute)
	m.End(t.Context(), "a")
	waitFor(t, func() bool { return eng.running() == 0 }) // removed in the background
	if r := run(t, m, "a", "print('x' in globals())", time.Minute); r.Stdout != "False\n" || r.Session.Reason != ReasonFirst {
		t.Errorf("after End: %q %+v", r.Stdout, r.Session)
	}
}

// running returns a line of code that creates a file, and a function that
// waits for the file: once it returns, the run's own code is executing, so a
// SIGINT interrupts that code rather than the bootstrap before it (which would
// leave the code waiting until its time limit).
func running(t *testing.T) (code string, started func()) {
	mark := filepath.Join(t.TempDir(), "running")
	return fmt.Sprintf("open(%q, 'w').close()\n", mark), func() {
		t.Helper()
		waitFor(t, func() bool { _, err := os.Stat(mark); return err == nil })
	}
}

// waitFor waits for cond, which other goroutines make true.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSessionDiedBetweenRuns: an interpreter that dies between runs (code
// left running exits or exhausts memory, or the container is killed) is not
// charged to the next run: that run starts a new session, says why, and runs.
func TestSessionDiedBetweenRuns(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{})
	for _, tt := range []struct {
		name   string
		setup  string
		sig    syscall.Signal
		reason string
	}{
		{"killed", "x = 1", syscall.SIGKILL, ReasonOOM}, // SIGKILL stands in for the OOM killer
		{"exited", "import os, signal\nsignal.signal(signal.SIGUSR1, lambda *a: os._exit(5))", syscall.SIGUSR1, ReasonCrash},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := run(t, m, "a", tt.setup, time.Minute)
			s, _ := m.session(t.Context(), Request{Session: "a"})
			eng.signal(tt.sig)
			waitFor(t, func() bool {
				if !s.tryAcquire() { // the interpreter is the turn's
					return false
				}
				defer s.release(t.Context())
				select {
				case <-s.it.Done():
					return true
				default:
					return false
				}
			})
			r := run(t, m, "a", "print('x' in globals())", time.Minute)
			if r.Stdout != "False\n" || r.Error != nil {
				t.Errorf("the run after the session died: %q %+v", r.Stdout, r.Error)
			}
			if !r.Session.New || r.Session.Reason != tt.reason || r.Session.ID == first.Session.ID || r.Session.Ended != "" {
				t.Errorf("session %+v, want a new one (reason %s) after %+v", r.Session, tt.reason, first.Session)
			}
			waitFor(t, func() bool { return eng.running() == 1 }) // the dead container removed, the new one running
		})
	}
}

// runRecorder builds the hosts of runs and records which session and run each
// request came from.
type runRecorder struct {
	mu   sync.Mutex
	seen []SessionInfo
}

func (r *runRecorder) host(run SessionInfo) python.Host { return runHost{r, run} }

type runHost struct {
	r   *runRecorder
	run SessionInfo
}

func (h runHost) Call(_ context.Context, method string, _ json.RawMessage) (any, error) {
	if method != "call_tool" {
		return nil, nil // the tool's docs, which the sandbox asks for first: none
	}
	h.r.mu.Lock()
	h.r.seen = append(h.r.seen, SessionInfo{ID: h.run.ID, Run: h.run.Run})
	h.r.mu.Unlock()
	return "ok", nil
}

// TestRunHost: the host of a run is told its session and run, in a session
// and in a one-off container alike.
func TestRunHost(t *testing.T) {
	const code = "from mcp import runtime\nprint(runtime.call_tool_sync('s', 't', raw=True))"
	for _, sessions := range []bool{true, false} {
		t.Run(fmt.Sprintf("sessions=%v", sessions), func(t *testing.T) {
			m := newManager(t, newFakeEngine(t), Options{})
			m.opts.Sessions = sessions
			r := &runRecorder{}
			var want []SessionInfo
			for range 2 {
				res, err := m.Run(t.Context(), Request{Session: "a", Program: python.Program{Code: code}, Host: r.host, Timeout: time.Minute})
				if err != nil || res.Error != nil || res.Stdout != "ok\n" {
					t.Fatalf("run: %v %+v %q", err, res.Error, res.Stdout)
				}
				want = append(want, SessionInfo{ID: res.Session.ID, Run: res.Session.Run})
			}
			if diff := cmp.Diff(want, r.seen); diff != "" {
				t.Errorf("host calls' runs (-want +got):\n%s", diff)
			}
			if sessions && (want[0].ID != want[1].ID || want[1].Run != 2) {
				t.Errorf("runs of one session: %+v", want)
			}
		})
	}
}

// TestRunWait: a run that starts a container waits for the engine as its
// Wait says, in a session and in a one-off container alike.
func TestRunWait(t *testing.T) {
	for _, sessions := range []bool{true, false} {
		t.Run(fmt.Sprintf("sessions=%v", sessions), func(t *testing.T) {
			eng := newFakeEngine(t)
			eng.preparing = "pulling the image"
			m := newManager(t, eng, Options{})
			m.opts.Sessions = sessions
			var lines []string
			var waited time.Duration
			w := Wait{Progress: func(line string) { lines = append(lines, line) }, Waited: func(d time.Duration) { waited += d }}
			res, err := m.Run(t.Context(), Request{Session: "a", Program: python.Program{Code: "print(1)"}, Timeout: time.Minute, Wait: w})
			if err != nil || res.Error != nil {
				t.Fatalf("run: %v %+v", err, res.Error)
			}
			if !slices.Equal(lines, []string{"pulling the image"}) || waited != time.Millisecond {
				t.Errorf("the run saw %q and waited %v; want the engine's line and its 1 ms", lines, waited)
			}
		})
	}
}

// TestEndOrCloseWhileRunning: ending a session, or closing the manager,
// while a run holds the session's turn waits for that run or cancels it; it
// never takes the run's interpreter from under it.
func TestEndOrCloseWhileRunning(t *testing.T) {
	done, cancel := context.WithCancel(t.Context())
	cancel() // a context already done stands in for a wait that ran out
	for _, tt := range []struct {
		name  string
		stuck bool                   // the run's process is stopped, so it cannot be interrupted
		stop  func(m *Manager) error // called while the run is in progress
		ended string                 // the run's Session.Ended
	}{
		{"end", false, func(m *Manager) error { m.End(done, "a"); return nil }, ""},
		{"close", false, func(m *Manager) error { return m.Close(t.Context()) }, ""},
		{"close while stuck", true, func(m *Manager) error {
			if err := m.Close(done); !errors.Is(err, context.Canceled) {
				return fmt.Errorf("got %v, want the run named as not stopping", err)
			}
			return nil
		}, ReasonCancel},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eng := newFakeEngine(t)
			// The grace is the time interrupted code has to stop: long when
			// it will, so that the test does not depend on python3's speed.
			grace := time.Minute
			if tt.stuck {
				grace = 100 * time.Millisecond
			}
			m := newManager(t, eng, Options{Limits: python.Limits{InterruptGrace: grace}})
			run(t, m, "a", "import threading\ngo = threading.Event()", time.Minute)
			mark, started := running(t)
			first := make(chan *Result)
			go func() { first <- run(t, m, "a", mark+"go.wait()", time.Minute) }()
			started()
			if tt.stuck {
				eng.signal(syscall.SIGSTOP)
			}
			if err := tt.stop(m); err != nil {
				t.Error(err)
			}
			res := <-first
			if res.Error == nil || res.Error.Kind != protocol.FailTimeout || res.Session.Ended != tt.ended {
				t.Errorf("the run in progress: %+v %+v", res.Error, res.Session)
			}
			waitFor(t, func() bool { return eng.running() == 0 })
		})
	}
}

// TestEndWaitsForRun: End lets the run in progress finish; a run queued
// behind it is told the session has ended and starts no container.
func TestEndWaitsForRun(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{})
	run(t, m, "a", "import threading\ngo = threading.Event()", time.Minute)
	s, _ := m.session(t.Context(), Request{Session: "a"})
	mark, started := running(t)
	first := make(chan *Result)
	go func() { first <- run(t, m, "a", mark+"go.wait()\nprint('first')", time.Minute) }()
	started()
	queued := make(chan *Result)
	go func() { queued <- run(t, m, "a", "print('queued')", time.Minute) }()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiters) == 1 })
	ended := make(chan struct{})
	go func() { m.End(t.Context(), "a"); close(ended) }()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiters) == 2 })
	eng.signal(syscall.SIGINT) // the first run ends on its own
	if res := <-first; res.Error == nil || res.Error.Type != "KeyboardInterrupt" || res.Session.Ended != "" {
		t.Errorf("the run in progress: %+v %+v", res.Error, res.Session)
	}
	if res := <-queued; res.Error == nil || res.Error.Kind != protocol.FailUnavailable || !strings.Contains(res.Error.Message, "session has ended") {
		t.Errorf("the queued run: %q %+v", res.Stdout, res.Error)
	}
	<-ended
	waitFor(t, func() bool { return eng.running() == 0 })
	if n := eng.started.Load(); n != 1 {
		t.Errorf("%d containers started, want 1", n)
	}
}

// TestRunSlots: with MaxRuns 1, a second session's run waits for the slot
// instead of failing, and gets it before a burst queued behind the first
// session's turn; a run that waits longer than its time limit fails busy.
func TestRunSlots(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{MaxRuns: 1})
	run(t, m, "a", "import threading\ngo = threading.Event()", time.Minute)
	run(t, m, "b", "pass", time.Minute)

	// a holds the only slot.
	first := make(chan *Result)
	mark, started := running(t)
	go func() { first <- run(t, m, "a", mark+"go.wait()", time.Minute) }()
	started()

	// b waits for the slot past a short limit: busy, naming the limit.
	r := run(t, m, "b", "print('never')", 50*time.Millisecond)
	var limit *RunLimitError
	if r.Error == nil || r.Error.Kind != protocol.FailBusy || !errors.As(r.Cause, &limit) || limit.Limit != 1 || r.Stdout != "" {
		t.Fatalf("a run that waited past its limit for a slot: %+v, cause %#v", r.Error, r.Cause)
	}

	// A burst of three more runs of a queues behind a's turn; then b's run
	// queues for the slot. When a's run ends, b's run executes first: runs
	// execute one at a time, each appending its session to the log.
	log := filepath.Join(t.TempDir(), "log")
	appendLog := func(who string) string { return fmt.Sprintf("open(%q, 'a').write(%q)", log, who) }
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { run(t, m, "a", appendLog("a"), time.Minute) })
	}
	s, _ := m.session(t.Context(), Request{Session: "a"})
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiters) == 3 })
	wg.Go(func() { run(t, m, "b", appendLog("b"), time.Minute) })
	waitFor(t, func() bool { return m.slots.queued() == 1 })
	eng.signal(syscall.SIGINT) // a's first run ends
	<-first
	wg.Wait()
	if got, _ := os.ReadFile(log); string(got) != "baaa" {
		t.Errorf("runs executed in the order %q, want b's first (it waited for the slot while a's burst waited for a's turn)", got)
	}
}

// TestRunSlotsFairWithoutSessions: without sessions a session's runs do not
// take turns, yet a burst of them queued for the only slot does not hold
// back another session's run: the freed slot goes to each session in turn.
func TestRunSlotsFairWithoutSessions(t *testing.T) {
	eng := newFakeEngine(t)
	m := New(eng, Options{MaxRuns: 1})
	t.Cleanup(func() { m.Close(context.Background()) })
	first := make(chan *Result)
	mark, started := running(t)
	go func() { first <- run(t, m, "a", mark+"import time\ntime.sleep(60)", time.Minute) }()
	started()

	log := filepath.Join(t.TempDir(), "log")
	appendLog := func(who string) string { return fmt.Sprintf("open(%q, 'a').write(%q)", log, who) }
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { run(t, m, "a", appendLog("a"), time.Minute) })
	}
	waitFor(t, func() bool { return m.slots.queued() == 3 })
	wg.Go(func() { run(t, m, "b", appendLog("b"), time.Minute) })
	waitFor(t, func() bool { return m.slots.queued() == 4 })
	eng.signal(syscall.SIGINT) // a's first run ends
	if res := <-first; res.Error == nil || res.Error.Type != "KeyboardInterrupt" {
		t.Errorf("first run: %+v", res.Error)
	}
	wg.Wait()
	if got, _ := os.ReadFile(log); string(got) != "abaa" {
		t.Errorf("runs executed in the order %q, want b's second (the slot goes to each session in turn)", got)
	}
}

// TestSpareAfterLoss: with Spare and no warm containers, a session holds
// its own container and nothing else, until a time limit or a reset takes
// that container; then one spare starts, and the run after the loss starts
// on it (the engine fails every other start).
func TestSpareAfterLoss(t *testing.T) {
	eng := newFakeEngine(t)
	m := newManager(t, eng, Options{Spare: true, Limits: python.Limits{InterruptGrace: 100 * time.Millisecond}})
	warm := func() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.warm) + m.filling }
	run(t, m, "a", "x = 1", time.Minute)
	if n, w := eng.running(), warm(); n != 1 || w != 0 {
		t.Fatalf("after a first run: %d containers running, %d warm or starting; want the session's alone", n, w)
	}

	eng.signal(syscall.SIGSTOP) // stuck: the time limit kills the container
	if r := run(t, m, "a", "print('never')", 100*time.Millisecond); r.Session.Ended != ReasonTimeout {
		t.Fatalf("stuck run: %+v %+v", r.Error, r.Session)
	}
	waitFor(t, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return len(m.warm) == 1 })
	eng.fail.Store(true)
	if r := run(t, m, "a", "print(1)", time.Minute); r.Stdout != "1\n" || r.Session.Reason != ReasonTimeout {
		t.Fatalf("the run after the time limit, on the spare: %q %+v %+v", r.Stdout, r.Error, r.Session)
	}
	eng.fail.Store(false)
	if w := warm(); w != 0 {
		t.Errorf("%d warm or starting after the spare was taken, want none", w)
	}

	reset := func() *Result {
		t.Helper()
		r, err := m.Run(t.Context(), Request{Session: "a", Reset: true, Program: python.Program{Code: "print(2)"}, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := reset(); r.Stdout != "2\n" || r.Session.Reason != ReasonReset {
		t.Fatalf("first reset: %q %+v %+v", r.Stdout, r.Error, r.Session)
	}
	waitFor(t, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return len(m.warm) == 1 })
	eng.fail.Store(true)
	if r := reset(); r.Stdout != "2\n" || r.Session.Reason != ReasonReset {
		t.Errorf("second reset, on the spare: %q %+v %+v", r.Stdout, r.Error, r.Session)
	}
	eng.fail.Store(false)
}

// TestStartedAndWarmContainers: Options.Started hears of every container
// start, failed ones too, and WarmContainers counts the warm ones waiting.
func TestStartedAndWarmContainers(t *testing.T) {
	eng := newFakeEngine(t)
	var mu sync.Mutex
	var ok, failed int
	m := newManager(t, eng, Options{Warm: 1, Started: func(took time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if took < 0 {
			t.Errorf("a start took %v", took)
		}
		if err != nil {
			failed++
		} else {
			ok++
		}
	}})
	starts := func() (int, int) { mu.Lock(); defer mu.Unlock(); return ok, failed }
	m.Warm(t.Context())
	if n := m.WarmContainers(); n != 1 {
		t.Fatalf("WarmContainers = %d after Warm, want 1", n)
	}
	eng.fail.Store(true) // the warm container's replacement fails to start
	if r := run(t, m, "a", "print(1)", time.Minute); r.Stdout != "1\n" {
		t.Fatalf("run on the warm container: %q %+v", r.Stdout, r.Error)
	}
	waitFor(t, func() bool { _, f := starts(); return f >= 1 })
	if n := m.WarmContainers(); n != 0 {
		t.Errorf("WarmContainers = %d after the warm one was taken and its replacement failed, want 0", n)
	}
	if o, f := starts(); o != 1 || f < 1 || int64(o) != eng.started.Load() {
		t.Errorf("Started heard of %d starts and %d failures; the engine started %d", o, f, eng.started.Load())
	}
}
