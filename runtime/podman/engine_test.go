package podman

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// newTestEngine returns an engine on its own Podman service, closed (and
// checked to leave nothing behind) when t ends.
func newTestEngine(t testing.TB, opts EngineOptions) *Engine {
	t.Helper()
	testenv.RequirePodmanBinary(t)
	if opts.Image == "" {
		opts.Image = testImage(t, testClient(t))
	}
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = testenv.Logger()
	}
	if opts.Spec.Runtime == "" {
		opts.Spec.Runtime = testenv.Runtime()
	}
	if opts.serviceIdle == 0 {
		opts.serviceIdle = time.Second // not to keep services of the tests
	}
	if opts.Spec.Command == nil { // codebridge's sandbox, with its socket
		opts.Spec.Command = python.Command()
		opts.Spec.Channel = python.ChannelEnv
	}
	e := NewEngine(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := e.client()
		if err := e.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if c != nil {
			waitNoneOwned(t, c.owner[labelClient])
		}
	})
	return e
}

// waitNoneOwned waits until Podman has removed every container of the
// client with this label: [Engine.Close] ends them and does not wait for
// their removal.
func waitNoneOwned(t testing.TB, clientLabel string) {
	t.Helper()
	start := time.Now()
	testenv.Eventually(t, "Podman removes the containers of a closed engine", func() bool { return countOwned(t, clientLabel) == 0 })
	t.Logf("the closed engine's containers were removed %v after Close returned", time.Since(start).Round(time.Millisecond))
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

// runOnce runs code in a fresh container of e and removes it.
func runOnce(t testing.TB, e *Engine, code string) (*python.Result, error) {
	t.Helper()
	b, err := e.Start(t.Context(), sandbox.Wait{})
	if err != nil {
		return nil, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b.Remove(ctx)
	}()
	return python.Exec(t.Context(), b.Stream(), python.Program{Code: code}, nil, 30*time.Second)
}

func TestEngineRunAndClose(t *testing.T) {
	e := newTestEngine(t, EngineOptions{})
	res, err := runOnce(t, e, "import sys\nprint('hello')\nprint('oops', file=sys.stderr)")
	if err != nil || res.Error != nil || res.Stdout != "hello\n" || res.Stderr != "oops\n" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	b, err := e.Start(t.Context(), sandbox.Wait{})
	if err != nil {
		t.Fatal(err)
	}
	svc := e.client().svc
	if svc == nil {
		t.Fatal("no private podman service (is CONTAINER_HOST set?)")
	}
	label := e.client().owner[labelClient]
	// The run's container ended with its stream; Podman removes it.
	testenv.Eventually(t, "the engine has only the container started", func() bool { return countOwned(t, label) == 1 })
	// Close ends what is still running, which Podman then removes, and
	// stops the service it started.
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-svc.gone: // it exits once idle
	case <-time.After(time.Minute): // a hang guard only
		t.Error("podman service still running a minute after Close")
	}
	select {
	case <-b.Done():
	case <-time.After(time.Minute): // a hang guard only
		t.Error("container's stream still open a minute after Close")
	}
	waitNoneOwned(t, label)
	if _, err := e.Start(t.Context(), sandbox.Wait{}); err == nil {
		t.Error("Start after Close succeeded")
	}
}

func TestEngineUnavailableThenRecovers(t *testing.T) {
	testenv.RequirePodmanBinary(t)
	if _, err := os.Stat(rootfulSocket); err == nil {
		t.Skipf("%s exists: Connect would use it", rootfulSocket)
	}
	e := newTestEngine(t, EngineOptions{})
	t.Setenv("CONTAINER_HOST", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	path := os.Getenv("PATH")
	t.Setenv("PATH", "")
	if _, err := e.Start(t.Context(), sandbox.Wait{}); err == nil || !strings.Contains(err.Error(), "podman is not installed") {
		t.Fatalf("without podman: %v", err)
	}
	os.Setenv("PATH", path) // "podman gets installed"; t.Setenv restores it
	res, err := runOnce(t, e, "print(1)")
	if err != nil || res.Stdout != "1\n" {
		t.Errorf("after podman appeared: %+v, %v", res, err)
	}
}

// TestEngineServiceDies kills the private Podman service while a container
// runs: Exit reports Podman unavailable, the next Start connects again, and
// the container left running under the old service is removed.
func TestEngineServiceDies(t *testing.T) {
	e := newTestEngine(t, EngineOptions{})
	b, err := e.Start(t.Context(), sandbox.Wait{})
	if err != nil {
		t.Fatal(err)
	}
	old := e.client()
	if old.svc == nil || old.svc.child == nil {
		t.Skip("no podman service of this engine's (CONTAINER_HOST or a system socket is in use)")
	}
	oldLabel := old.owner[labelClient]
	old.svc.child.cmd.Process.Kill()
	<-old.svc.gone
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := b.Exit(ctx); err == nil || !strings.Contains(err.Error(), "lost the connection to Podman") {
		t.Errorf("Exit with the service dead: %v", err)
	}
	res, err := runOnce(t, e, "print(1)")
	if err != nil || res.Stdout != "1\n" {
		t.Fatalf("next run: %+v, %v", res, err)
	}
	if e.client() == old {
		t.Error("still using the old client")
	}
	if n := countOwned(t, oldLabel); n != 0 {
		t.Errorf("%d containers started through the dead service remain", n)
	}
}

func TestEngineConcurrent(t *testing.T) {
	e := newTestEngine(t, EngineOptions{})
	const n = 4
	errs := make(chan string, n)
	for i := range n {
		go func() {
			res, err := runOnce(t, e, "import os\nprint(os.getpid() > 0, "+strconv.Itoa(i)+")")
			switch {
			case err != nil:
				errs <- err.Error()
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

// TestExitTurns: a container ended alone (its stream shut down) exits at
// once whatever its exit turn; when the engine closes every stream at once,
// as a codebridge shutting down or killed does, each container exits after
// its turn, and turns are given back for reuse.
func TestExitTurns(t *testing.T) {
	e := newTestEngine(t, EngineOptions{ExitDelay: python.ExitDelayEnv, ExitInterval: time.Hour})
	a, b, c := startChannel(t, e), startChannel(t, e), startChannel(t, e)
	if turn(a) != 0 || turn(b) != 1 || turn(c) != 2 {
		t.Fatalf("turns %d, %d, %d; want 0, 1, 2", turn(a), turn(b), turn(c))
	}
	for _, x := range []sandbox.Container{a, b, c} {
		if !boxCt(x).Socket() {
			t.Fatalf("the sandbox did not connect to its socket; stderr: %s", x.Stderr())
		}
	}
	id := b.ID()
	if err := b.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	code, err := (&APIContainer{c: testClient(t), id: id, started: b.Started()}).Wait(t.Context())
	if err != nil || code != 0 {
		t.Errorf("the container ended alone: exit code %d, %v; want 0 (it exited by itself, not an hour later killed)", code, err)
	}
	d := startChannel(t, e)
	if turn(d) != 1 {
		t.Errorf("a new container took turn %d; want 1, given back", turn(d))
	}

	label := e.client().owner[labelClient]
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	code, err = (&APIContainer{c: testClient(t), id: a.ID(), started: a.Started()}).Wait(t.Context())
	if err != nil || code != 0 {
		t.Errorf("turn 0 after Close: exit code %d, %v; want 0", code, err)
	}
	// The others wait for their turn, an hour or more.
	for _, x := range []sandbox.Container{c, d} {
		st, err := testClient(t).inspect(t.Context(), x.ID())
		if err != nil || !st.Running {
			t.Errorf("container of turn %d after Close: %+v, %v; want it running until its turn", turn(x), st, err)
		}
	}
	if _, err := removeByClient(t.Context(), testClient(t), label); err != nil {
		t.Fatal(err)
	}
}

// TestExitTurnsWhenManyEnd: when more containers end than Podman cleans up
// after (here one an hour, one at once), the first exits at once and the
// next waits for its turn, and Remove does not wait for it.
func TestExitTurnsWhenManyEnd(t *testing.T) {
	e := newTestEngine(t, EngineOptions{ExitDelay: python.ExitDelayEnv, ExitInterval: time.Hour, exitBurst: 1})
	a, b := startChannel(t, e), startChannel(t, e)
	if !boxCt(a).Socket() || !boxCt(b).Socket() {
		t.Fatalf("the sandboxes did not connect to their sockets; stderr: %s %s", a.Stderr(), b.Stderr())
	}
	label := e.client().owner[labelClient]
	t.Cleanup(func() { removeByClient(context.Background(), testClient(t), label) })
	if err := a.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	code, err := (&APIContainer{c: testClient(t), id: a.ID(), started: a.Started()}).Wait(t.Context())
	if err != nil || code != 0 {
		t.Errorf("the first to end: exit code %d, %v; want 0 (it exited by itself)", code, err)
	}
	if err := b.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	st, err := testClient(t).inspect(t.Context(), b.ID())
	if err != nil || !st.Running {
		t.Errorf("the second to end, after Remove: %+v, %v; want it running until its turn, an hour on", st, err)
	}
}

// boxCt is b's container as Podman's API knows it.
func boxCt(b sandbox.Container) *APIContainer {
	return b.(*enginekit.Container).APIContainer().(*APIContainer)
}

// turn is b's exit turn.
func turn(b sandbox.Container) int { return b.(*enginekit.Container).Turn() }
