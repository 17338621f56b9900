package podman

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestImagePull pulls a missing image once, from a registry on loopback, for
// every caller waiting: a caller whose limit passes first gets an error that
// explains the wait, and one that waits sees Podman's progress to the end.
func TestImagePull(t *testing.T) {
	podman := testenv.RequirePodmanBinary(t)
	gate := make(chan struct{})
	ref := testenv.Registry(t, testenv.MinimalImage(), gate)
	t.Cleanup(func() { exec.Command(podman, "rmi", "--force", ref).Run() })
	if exec.Command(podman, "image", "exists", ref).Run() == nil {
		t.Fatalf("%s exists before the test pulls it", ref)
	}
	e := NewEngine(EngineOptions{Image: ref, StateDir: t.TempDir(), Logger: testenv.Logger()})
	t.Cleanup(func() { e.Close(context.Background()) })

	// The registry holds the pull, so this caller's limit passes first.
	err := e.Ready(t.Context(), sandbox.Wait{Limit: 100 * time.Millisecond})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "run the code again") {
		t.Fatalf("Ready with a 100 ms limit during the pull = %v; want ErrUnavailable explaining the wait", err)
	}

	var (
		mu     sync.Mutex
		lines  []string
		first  = make(chan struct{})
		waited time.Duration
	)
	patient := sandbox.Wait{
		Progress: func(line string) {
			mu.Lock()
			defer mu.Unlock()
			if len(lines) == 0 {
				close(first)
			}
			lines = append(lines, line)
		},
		Waited: func(d time.Duration) { waited += d },
	}
	done := make(chan error, 1)
	go func() { done <- e.Ready(t.Context(), patient) }()
	<-first // it is waiting, and sees the pull's progress
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("Ready once the registry answers: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(lines[0], "pulling it") || !slices.Contains(lines, "pulled "+ref) {
		t.Errorf("progress seen = %q; want the pull announced first and its end last", lines)
	}
	if waited <= 0 {
		t.Errorf("Waited told %v; want the wait", waited)
	}
	if exec.Command(podman, "image", "exists", ref).Run() != nil {
		t.Errorf("%s does not exist after the pull", ref)
	}
	// Resolved once: later callers do not wait.
	var laterLines, laterWaits int
	later := sandbox.Wait{Progress: func(string) { laterLines++ }, Waited: func(time.Duration) { laterWaits++ }}
	if err := e.Ready(t.Context(), later); err != nil || laterLines != 0 || laterWaits != 0 {
		t.Errorf("Ready after the pull = %v, %d progress lines, told waited %d times; want nil at once", err, laterLines, laterWaits)
	}
}
