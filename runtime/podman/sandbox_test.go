package podman

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// newTestSandbox returns a sandbox on its own Podman service, closed (and
// checked to leave nothing behind) when t ends.
func newTestSandbox(t testing.TB, opts SandboxOptions) *Sandbox {
	t.Helper()
	testenv.RequirePodmanBinary(t)
	if opts.Image == "" {
		opts.Image = testImage(t, testClient(t))
	}
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	s := NewSandbox(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.mu.Lock()
		c := s.client
		s.mu.Unlock()
		var clientLabel string
		if c != nil {
			clientLabel = c.owner[labelClient]
		}
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if clientLabel != "" {
			if n := countOwned(t, clientLabel); n != 0 {
				t.Errorf("%d containers left after Close", n)
			}
		}
	})
	return s
}

// countOwned counts the containers of the client with this label, through
// the package's shared client.
func countOwned(t testing.TB, clientLabel string) int {
	t.Helper()
	list, err := testClient(t).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range list {
		if s.Labels[labelClient] == clientLabel {
			n++
		}
	}
	return n
}

func run(t testing.TB, s *Sandbox, code string, timeout time.Duration) *python.Result {
	t.Helper()
	res, err := s.Run(t.Context(), python.Program{Code: code}, nil, timeout)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res == nil {
		t.Fatal("Run returned a nil Result")
	}
	return res
}

func TestSandboxRun(t *testing.T) {
	s := newTestSandbox(t, SandboxOptions{})
	if err := s.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := run(t, s, "import sys\nprint('hello')\nprint('oops', file=sys.stderr)", 30*time.Second)
	if res.Error != nil || res.Stdout != "hello\n" || res.Stderr != "oops\n" {
		t.Fatalf("Run: %+v, error %+v", res, res.Error)
	}
	// Each run gets a fresh container: nothing written by one is seen by the next.
	res = run(t, s, "open('/tmp/mark', 'w').write('x')\nopen('/work/mark', 'w').write('x')", 30*time.Second)
	if res.Error != nil {
		t.Fatalf("writing a mark: %+v", res.Error)
	}
	res = run(t, s, "import os\nprint(os.path.exists('/tmp/mark'), os.path.exists('/work/mark'))", 30*time.Second)
	if res.Error != nil || res.Stdout != "False False\n" {
		t.Errorf("second run sees the first one's files: %q %+v", res.Stdout, res.Error)
	}
	res = run(t, s, "raise ValueError('bad')", 30*time.Second)
	if res.Error == nil || res.Error.Kind != python.FailException || res.Error.Type != "ValueError" {
		t.Errorf("exception: %+v", res.Error)
	}

	// Close removes everything and stops the service it started.
	svc := s.client.svc
	if svc == nil {
		t.Fatal("no private podman service (is CONTAINER_HOST set?)")
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-svc.exited:
	default:
		t.Error("podman service still running after Close")
	}
	res = run(t, s, "print(1)", 30*time.Second)
	if res.Error == nil || res.Error.Kind != python.FailUnavailable {
		t.Errorf("run after Close: %+v", res.Error)
	}
}

func TestSandboxTimeout(t *testing.T) {
	s := newTestSandbox(t, SandboxOptions{WarmContainers: -1})
	t0 := time.Now()
	res := run(t, s, "print('started', flush=True)\nwhile True: pass", 2*time.Second)
	took := time.Since(t0)
	if res.Error == nil || res.Error.Kind != python.FailTimeout || res.Error.Message != "timed out after 2 seconds" {
		t.Fatalf("Run: error %+v, want a timeout", res.Error)
	}
	if res.Stdout != "started\n" {
		t.Errorf("output so far %q, want %q", res.Stdout, "started\n")
	}
	if took > 5*time.Second {
		t.Errorf("timed-out run took %v", took)
	}
	if n := countOwned(t, s.client.owner[labelClient]); n != 0 {
		t.Errorf("%d containers remain after a timed-out run", n)
	}
	res = run(t, s, "print(1)", 30*time.Second)
	if res.Error != nil || res.Stdout != "1\n" {
		t.Errorf("run after a timeout: %q %+v", res.Stdout, res.Error)
	}
}

func TestSandboxOOM(t *testing.T) {
	s := newTestSandbox(t, SandboxOptions{Memory: 64 << 20, WarmContainers: -1})
	res := run(t, s, "b = b'x' * (256 << 20)\nprint('survived')", 30*time.Second)
	if res.Error == nil || res.Error.Kind != python.FailOOM {
		t.Fatalf("Run: %q, error %+v; want out_of_memory", res.Stdout, res.Error)
	}
	t.Logf("OOM: %+v exit %d stdout %q", res.Error, res.ExitCode, res.Stdout)
	res = run(t, s, "print(1)", 30*time.Second)
	if res.Error != nil || res.Stdout != "1\n" {
		t.Errorf("run after an OOM kill: %q %+v", res.Stdout, res.Error)
	}
}

func TestSandboxProcessDies(t *testing.T) {
	s := newTestSandbox(t, SandboxOptions{})
	res := run(t, s, "import os\nprint('bye', flush=True)\nos._exit(3)", 30*time.Second)
	if res.Error == nil || res.Error.Kind != python.FailExit || res.ExitCode != 3 {
		t.Fatalf("os._exit(3): exit %d, error %+v", res.ExitCode, res.Error)
	}
	if !strings.Contains(res.Error.Message, "exit code 3") {
		t.Errorf("message %q does not give the exit code", res.Error.Message)
	}
	res = run(t, s, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", 30*time.Second)
	if res.Error == nil || res.Error.Kind != python.FailExit || !strings.Contains(res.Error.Message, "signal 11") {
		t.Errorf("SIGSEGV: exit %d, error %+v", res.ExitCode, res.Error)
	}
}

func TestSandboxUnavailableThenRecovers(t *testing.T) {
	testenv.RequirePodmanBinary(t)
	if _, err := os.Stat(rootfulSocket); err == nil {
		t.Skipf("%s exists: Connect would use it", rootfulSocket)
	}
	s := newTestSandbox(t, SandboxOptions{})
	t.Setenv("CONTAINER_HOST", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	path := os.Getenv("PATH")
	t.Setenv("PATH", "")
	res := run(t, s, "print(1)", 30*time.Second)
	if res.Error == nil || res.Error.Kind != python.FailUnavailable || !strings.Contains(res.Error.Message, "podman is not installed") {
		t.Fatalf("without podman: %+v", res.Error)
	}
	os.Setenv("PATH", path) // "podman gets installed"; t.Setenv restores it
	res = run(t, s, "print(1)", 30*time.Second)
	if res.Error != nil || res.Stdout != "1\n" {
		t.Errorf("after podman appeared: %q %+v", res.Stdout, res.Error)
	}
}

// TestSandboxWarmReplaced kills the warm container behind the pool's back:
// the pool must notice and start another, and runs keep working.
func TestSandboxWarmReplaced(t *testing.T) {
	s := newTestSandbox(t, SandboxOptions{WarmContainers: 2})
	if err := s.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	pool := append([]*Container(nil), s.pool...)
	s.mu.Unlock()
	if len(pool) != 2 {
		t.Fatalf("pool has %d containers, want 2", len(pool))
	}
	if err := pool[0].Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		n, replaced := len(s.pool), !containsCt(s.pool, pool[0])
		s.mu.Unlock()
		if n == 2 && replaced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool not refilled: %d containers, dead one replaced %v", n, replaced)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res := run(t, s, "print(2)", 30*time.Second)
	if res.Error != nil || res.Stdout != "2\n" {
		t.Errorf("run: %q %+v", res.Stdout, res.Error)
	}
}

func containsCt(list []*Container, ct *Container) bool {
	for _, c := range list {
		if c == ct {
			return true
		}
	}
	return false
}

// TestSandboxLatency compares a run on a warm container with one that has to
// start its container, at an agent's pace (-v shows the figures).
func TestSandboxLatency(t *testing.T) {
	for _, tt := range []struct {
		name string
		warm int
	}{{"warm", 1}, {"fresh", -1}} {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSandbox(t, SandboxOptions{WarmContainers: tt.warm})
			if err := s.Warm(t.Context()); err != nil {
				t.Fatal(err)
			}
			var times []time.Duration
			for range 8 {
				if tt.warm > 0 {
					waitPool(t, s, tt.warm)
				}
				// An agent's calls are seconds apart: let the previous
				// container's removal and the refill settle.
				time.Sleep(time.Second)
				t0 := time.Now()
				res := run(t, s, "print(1)", 30*time.Second)
				times = append(times, time.Since(t0))
				if res.Error != nil || res.Stdout != "1\n" {
					t.Fatalf("run: %q %+v", res.Stdout, res.Error)
				}
			}
			t.Logf("%s: print(1) took %v", tt.name, times)
		})
	}
}

func waitPool(t testing.TB, s *Sandbox, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		have := len(s.pool)
		s.mu.Unlock()
		if have >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm pool has %d containers after 20 s, want %d", have, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkSandboxRunPrint measures print(1) on a warm container, with time
// between runs for the pool to refill (as between an agent's calls).
func BenchmarkSandboxRunPrint(b *testing.B) {
	s := newTestSandbox(b, SandboxOptions{})
	if err := s.Warm(b.Context()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		waitPool(b, s, 1)
		time.Sleep(300 * time.Millisecond) // the refilled bootstrap finishes its imports
		b.StartTimer()
		res := run(b, s, "print(1)", 30*time.Second)
		if res.Error != nil || res.Stdout != "1\n" {
			b.Fatalf("run: %q %+v", res.Stdout, res.Error)
		}
	}
}

// BenchmarkSandboxRunPrintBackToBack runs print(1) without pause: the pool
// cannot keep up, so this is bounded by starting containers.
func BenchmarkSandboxRunPrintBackToBack(b *testing.B) {
	s := newTestSandbox(b, SandboxOptions{})
	if err := s.Warm(b.Context()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res := run(b, s, "print(1)", 30*time.Second)
		if res.Error != nil || res.Stdout != "1\n" {
			b.Fatalf("run: %q %+v", res.Stdout, res.Error)
		}
	}
}

func TestSandboxCallerCancels(t *testing.T) {
	s := newTestSandbox(t, SandboxOptions{WarmContainers: -1})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(time.Second, cancel)
	res, err := s.Run(ctx, python.Program{Code: "print('x', flush=True)\nwhile True: pass"}, nil, time.Minute)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Run: %+v, %v; want a Result and context.Canceled", res, err)
	}
	// The container goes in the background.
	label := s.client.owner[labelClient]
	deadline := time.Now().Add(10 * time.Second)
	for countOwned(t, label) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("container of a cancelled run still exists after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSandboxServiceDies kills the private Podman service in the middle of a
// run: the run fails as unavailable, the next run starts a new service, and
// the container left running under the old one is removed.
func TestSandboxServiceDies(t *testing.T) {
	s := newTestSandbox(t, SandboxOptions{WarmContainers: -1})
	if err := s.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	old := s.client
	if old.svc == nil {
		t.Skip("no private podman service (CONTAINER_HOST or a system socket is in use)")
	}
	oldLabel := old.owner[labelClient]
	time.AfterFunc(time.Second, func() { old.svc.cmd.Process.Kill() })
	res := run(t, s, "print('x', flush=True)\nwhile True: pass", 30*time.Second)
	if res.Error == nil || res.Error.Kind != python.FailUnavailable {
		t.Fatalf("run while the service died: %+v", res.Error)
	}
	t.Logf("run while the service died: %+v", res.Error)
	if n := countOwned(t, oldLabel); n != 1 {
		t.Logf("%d containers of the dead service's client before the next run", n)
	}
	res = run(t, s, "print(1)", 30*time.Second)
	if res.Error != nil || res.Stdout != "1\n" {
		t.Fatalf("next run: %q %+v", res.Stdout, res.Error)
	}
	if s.client == old {
		t.Error("still using the old client")
	}
	if n := countOwned(t, oldLabel); n != 0 {
		t.Errorf("%d containers started through the dead service remain", n)
	}
}

func TestSandboxConcurrent(t *testing.T) {
	s := newTestSandbox(t, SandboxOptions{WarmContainers: 2})
	if err := s.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make(chan string, n)
	for i := range n {
		go func() {
			res, err := s.Run(t.Context(), python.Program{Code: "import os\nprint(os.getpid() > 0, " + strconv.Itoa(i) + ")"}, nil, 30*time.Second)
			switch {
			case err != nil:
				errs <- err.Error()
			case res.Error != nil:
				errs <- res.Error.Message
			case res.Stdout != "True "+strconv.Itoa(i)+"\n":
				errs <- "stdout " + res.Stdout
			default:
				errs <- ""
			}
		}()
	}
	for range n {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}
