package bridge

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/front"
	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/runtime/podman"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// fakeEngine is a container engine whose Ready runs until its context ends
// and whose Close fails. It records the order in which they happen. It
// starts no container.
type fakeEngine struct {
	warming  chan struct{} // closed when Ready has begun
	closeErr error

	mu              sync.Mutex // protects following
	warmEnded       bool
	closed          bool
	closedAfterWarm bool
}

func (f *fakeEngine) Start(context.Context, sandbox.Wait) (sandbox.Container, error) {
	return nil, errors.New("the fake engine starts nothing")
}

func (f *fakeEngine) Ready(ctx context.Context, _ sandbox.Wait) error {
	close(f.warming)
	<-ctx.Done()
	f.mu.Lock()
	f.warmEnded = true
	f.mu.Unlock()
	return ctx.Err()
}

func (f *fakeEngine) Close(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed, f.closedAfterWarm = true, f.warmEnded
	return f.closeErr
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer = testenv.SyncBuffer

// TestShutdownStopsWarmUp: Shutdown ends the warm-up goroutine and waits
// for it before closing the sandbox's engine, and reports the engine's Close
// error.
func TestShutdownStopsWarmUp(t *testing.T) {
	cfg := bridgetest.Config(t)
	cfg.ConfigDir = t.TempDir()
	cfg.WarmSandboxes = 1
	var logs syncBuffer
	sb := &fakeEngine{warming: make(chan struct{}), closeErr: errors.New("removing container 1234: podman is gone")}
	a := newApp(t.Context(), cfg, sb, slog.New(slog.NewTextHandler(&logs, nil)), "test", nil)
	select {
	case <-sb.warming:
	case <-t.Context().Done():
		t.Fatal("Warm was never called")
	}
	if err := a.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.warmEnded {
		t.Error("close returned while Warm was still running")
	}
	if !sb.closed || !sb.closedAfterWarm {
		t.Errorf("sandbox closed = %v, after Warm ended = %v; want it closed once Warm has ended", sb.closed, sb.closedAfterWarm)
	}
	if got := logs.String(); !strings.Contains(got, "podman is gone") {
		t.Errorf("the sandbox's Close error is not reported; logs:\n%s", got)
	}
}

// noImage is a sandbox engine for which no image can be pulled.
type noImage struct{}

func (noImage) Start(context.Context, sandbox.Wait) (sandbox.Container, error) {
	return nil, &podman.ImageError{Image: "localhost/x:1", Err: errors.New("manifest unknown"), Hint: podman.SetupHint}
}

// TestAppWordsCause: when the sandbox cannot run code, the result names
// the setting that would help.
func TestAppWordsCause(t *testing.T) {
	c := &App{sandbox: sandbox.New(noImage{}, sandbox.Options{}), trim: newIdleTrim(idleTrimAfter, nil)}
	t.Cleanup(func() { c.sandbox.Close(context.Background()) })
	res, err := c.Run(t.Context(), sandbox.Request{Program: python.Program{Code: "print(1)"}})
	if err != nil || res.Error == nil || res.Error.Kind != protocol.FailUnavailable ||
		!strings.Contains(res.Error.Message, "cannot start a sandbox container: sandbox image localhost/x:1 (MCP_BRIDGE_IMAGE) does not exist") ||
		!strings.HasSuffix(res.Error.Message, "or set MCP_BRIDGE_IMAGE to a local image with python3") {
		t.Errorf("Run = %+v, %v; want the image's failure naming MCP_BRIDGE_IMAGE", res.Error, err)
	}
}

// TestShutdownStopsFront: Shutdown stops a front that serves, after which
// ServeHTTP returns nil, and a front handed to ServeHTTP after Shutdown
// serves nothing.
func TestShutdownStopsFront(t *testing.T) {
	for _, tt := range []struct {
		name       string
		serveFirst bool
	}{{"serving", true}, {"shut down first", false}} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := bridgetest.Config(t)
			cfg.ConfigDir, cfg.WarmSandboxes, cfg.HTTP, cfg.HTTPAuth = t.TempDir(), 0, "127.0.0.1:0", false
			a := newApp(t.Context(), cfg, &fakeEngine{warming: make(chan struct{})}, slog.New(slog.DiscardHandler), "test", nil)
			f, err := front.Listen(FrontOptions(cfg, nil, io.Discard))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			served := make(chan error, 1)
			if tt.serveFirst {
				go func() { served <- a.ServeHTTP(f) }()
				testenv.Eventually(t, "ServeHTTP to take the front", func() bool {
					a.mu.Lock()
					defer a.mu.Unlock()
					return a.front != nil
				})
			}
			if err := a.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			if !tt.serveFirst {
				go func() { served <- a.ServeHTTP(f) }()
			}
			if err := <-served; err != nil {
				t.Errorf("ServeHTTP = %v, want nil after Shutdown", err)
			}
		})
	}
}
