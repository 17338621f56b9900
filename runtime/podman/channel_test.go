package podman

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// startChannel starts a container of e and waits until it has taken its
// stream; the container is removed when t ends.
func startChannel(t *testing.T, e *Engine) sandbox.Container {
	t.Helper()
	b, err := e.Start(t.Context(), sandbox.Wait{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b.Remove(ctx)
	})
	select {
	case <-boxCt(b).Ready():
	case <-time.After(time.Minute):
		t.Fatal("the container did not take its stream in a minute")
	}
	return b
}

// channelsLeft lists what is in the engine's socket folder.
func channelsLeft(t *testing.T, e *Engine) []string {
	t.Helper()
	entries, err := os.ReadDir(confine.ChannelsDir(e.opts.StateDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// readEnds starts a read on b's stream, calls end, and checks that the read
// fails within a minute.
func readEnds(t *testing.T, b sandbox.Container, end func()) {
	t.Helper()
	read := make(chan error, 1)
	go func() {
		_, err := b.Stream().Read(make([]byte, 1))
		read <- err
	}()
	end()
	select {
	case err := <-read:
		if err == nil {
			t.Error("the read returned data")
		}
	case <-time.After(time.Minute):
		t.Fatal("the read did not end in a minute")
	}
}

// TestChannelSocket runs code over the socket: the sandbox connected, and
// the socket is gone from its folder (nothing else can connect) before any
// code runs.
func TestChannelSocket(t *testing.T) {
	e := newTestEngine(t, EngineOptions{})
	b := startChannel(t, e)
	if !boxCt(b).Socket() {
		t.Fatalf("the sandbox did not connect to its socket; stderr: %s", b.Stderr())
	}
	if left := channelsLeft(t, e); len(left) != 0 {
		t.Errorf("socket folders left after the connection: %v", left)
	}
	res, err := python.Exec(t.Context(), b.Stream(), python.Program{Code: `
import os
print(os.environ["CODEBRIDGE_CHANNEL"], os.listdir("/run/codebridge"))`}, nil, 30*time.Second)
	if err != nil || res.Error != nil {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if want := "/run/codebridge/s []\n"; res.Stdout != want {
		t.Errorf("stdout %q, want %q", res.Stdout, want)
	}
}

// TestChannelEnds ends connected streams from the host's side and from the
// container's: a read waiting on the socket returns when the container is
// removed, and reads the end of the stream when the container is killed.
func TestChannelEnds(t *testing.T) {
	e := newTestEngine(t, EngineOptions{})
	for name, end := range map[string]func(b sandbox.Container) error{
		"removed": func(b sandbox.Container) error { return b.Remove(context.Background()) },
		"killed":  func(b sandbox.Container) error { return boxCt(b).Kill(context.Background()) },
	} {
		t.Run(name, func(t *testing.T) {
			b := startChannel(t, e)
			if !boxCt(b).Socket() {
				t.Fatalf("the sandbox did not connect to its socket; stderr: %s", b.Stderr())
			}
			// The bootstrap waits for its start frame: nothing comes.
			readEnds(t, b, func() {
				if err := end(b); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestChannelFallback covers a container that does not take the socket: one
// whose process cannot connect says so and talks over stdin and stdout; one
// that writes other output first keeps that output; one that exits at once
// ends its stream. No socket folder is left by any.
func TestChannelFallback(t *testing.T) {
	bootstrap := python.Command()[4]
	tests := []struct {
		name     string
		command  []string
		declined bool // the process says it cannot connect: warned once, with why
		check    func(t *testing.T, b sandbox.Container)
	}{
		{"cannot connect", []string{"sh", "-c", `CODEBRIDGE_CHANNEL=/run/codebridge/gone exec python3 -I -u -c "$0"`, bootstrap}, true,
			func(t *testing.T, b sandbox.Container) {
				res, err := python.Exec(t.Context(), b.Stream(), python.Program{Code: "print(6 * 7)"}, nil, 30*time.Second)
				if err != nil || res.Stdout != "42\n" {
					t.Errorf("run over stdin and stdout: %+v, %v", res, err)
				}
				if !strings.Contains(b.Stderr(), "cannot connect to /run/codebridge/gone") {
					t.Errorf("stderr %q does not say why", b.Stderr())
				}
			}},
		{"other output first", []string{"sh", "-c", "echo hello"}, false,
			func(t *testing.T, b sandbox.Container) {
				out, err := io.ReadAll(b.Stream())
				if err != nil || string(out) != "hello\n" {
					t.Errorf("stream %q, %v; want hello", out, err)
				}
			}},
		{"exits at once", []string{"true"}, false,
			func(t *testing.T, b sandbox.Container) {
				if out, err := io.ReadAll(b.Stream()); err != nil || len(out) != 0 {
					t.Errorf("stream %q, %v; want it ended", out, err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log testenv.SyncBuffer
			e := newTestEngine(t, EngineOptions{Spec: confine.Spec{Command: tt.command, Channel: python.ChannelEnv},
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			b := startChannel(t, e)
			if boxCt(b).Socket() {
				t.Fatal("the stream is a socket")
			}
			warned := strings.Contains(log.String(), "could not connect to its socket") &&
				strings.Contains(log.String(), "cannot connect to /run/codebridge/gone: ")
			if warned != tt.declined {
				t.Errorf("warned %v, want %v; log:\n%s", warned, tt.declined, log.String())
			}
			if left := channelsLeft(t, e); len(left) != 0 {
				t.Errorf("socket folders left: %v", left)
			}
			tt.check(t, b)
		})
	}
}

// TestChannelDeclinedTold: with Declined set, a container that cannot
// connect to its socket is reported to it, with why, instead of logged.
func TestChannelDeclinedTold(t *testing.T) {
	bootstrap := python.Command()[4]
	var (
		mu   sync.Mutex
		told []string
	)
	e := newTestEngine(t, EngineOptions{
		Spec: confine.Spec{Command: []string{"sh", "-c", `CODEBRIDGE_CHANNEL=/run/codebridge/gone exec python3 -I -u -c "$0"`, bootstrap}, Channel: python.ChannelEnv},
		Declined: func(container, reason string) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, container+": "+reason)
		},
	})
	b := startChannel(t, e)
	if _, err := python.Exec(t.Context(), b.Stream(), python.Program{Code: "print(1)"}, nil, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || !strings.Contains(told[0], enginekit.ShortID(b.ID())+": ") || !strings.Contains(told[0], "cannot connect to /run/codebridge/gone: ") {
		t.Errorf("Declined was told %q; want once, the container and why", told)
	}
}

// TestChannelClosedBeforeConnect closes a stream whose container has not
// connected (its process only sleeps): a read waiting for the container
// ends, a write fails, and the socket's folder is removed.
func TestChannelClosedBeforeConnect(t *testing.T) {
	e := newTestEngine(t, EngineOptions{Spec: confine.Spec{Command: []string{"sleep", "600"}, Channel: python.ChannelEnv}})
	b, err := e.Start(t.Context(), sandbox.Wait{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove(context.WithoutCancel(t.Context()))
	if left := channelsLeft(t, e); len(left) != 1 {
		t.Fatalf("socket folders before the container connects: %v, want one", left)
	}
	readEnds(t, b, func() {
		time.Sleep(100 * time.Millisecond) // most likely the read waits now; either way it must end
		b.Stream().Close()
	})
	if _, err := b.Stream().Write([]byte("x")); err == nil {
		t.Error("a write on the closed stream succeeded")
	}
	if left := channelsLeft(t, e); len(left) != 0 {
		t.Errorf("socket folders left: %v", left)
	}
}
