package podman

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python"
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
		opts.Logger = testLogger(t)
	}
	if opts.Spec.Runtime == "" {
		opts.Spec.Runtime = testenv.Runtime()
	}
	if opts.Spec.Command == nil { // codebridge's sandbox, with its socket
		opts.Spec.Command = python.Command()
		opts.Spec.Channel = python.ChannelEnv
	}
	e := NewEngine(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		e.mu.Lock()
		c := e.client
		e.mu.Unlock()
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
	b, err := e.Start(t.Context(), ImageWatch{})
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
	b, err := e.Start(t.Context(), ImageWatch{})
	if err != nil {
		t.Fatal(err)
	}
	svc := e.client.svc
	if svc == nil {
		t.Fatal("no private podman service (is CONTAINER_HOST set?)")
	}
	label := e.client.owner[labelClient]
	// The run's container ended with its stream; Podman removes it.
	testenv.Eventually(t, "the engine has only the container started", func() bool { return countOwned(t, label) == 1 })
	// Close ends what is still running, which Podman then removes, and
	// stops the service it started.
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-svc.exited:
	default:
		t.Error("podman service still running after Close")
	}
	select {
	case <-b.Done():
	case <-time.After(time.Minute): // a hang guard only
		t.Error("container's stream still open a minute after Close")
	}
	waitNoneOwned(t, label)
	if _, err := e.Start(t.Context(), ImageWatch{}); err == nil {
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
	if _, err := e.Start(t.Context(), ImageWatch{}); err == nil || !strings.Contains(err.Error(), "podman is not installed") {
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
	b, err := e.Start(t.Context(), ImageWatch{})
	if err != nil {
		t.Fatal(err)
	}
	old := e.client
	if old.svc == nil {
		t.Skip("no private podman service (CONTAINER_HOST or a system socket is in use)")
	}
	oldLabel := old.owner[labelClient]
	old.svc.cmd.Process.Kill()
	<-old.svc.exited
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := b.Exit(ctx); err == nil || !strings.Contains(err.Error(), "lost the connection to Podman") {
		t.Errorf("Exit with the service dead: %v", err)
	}
	res, err := runOnce(t, e, "print(1)")
	if err != nil || res.Stdout != "1\n" {
		t.Fatalf("next run: %+v, %v", res, err)
	}
	if e.client == old {
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
