package podman

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// crashChildEnv makes the test binary act as a codebridge that warms a
// sandbox, reports what it started, and waits to be killed.
const crashChildEnv = "CODEBRIDGE_PODMAN_CRASH_CHILD"

func init() {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		return
	}
	e := NewEngine(EngineOptions{StateDir: dir, Image: os.Getenv("CODEBRIDGE_PODMAN_CRASH_IMAGE"), Spec: Spec{
		Command: python.Command(),
		Env:     map[string]string{python.WaitLimitEnv: "3"},
	}})
	b, err := e.Start(context.Background(), ImageWatch{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ready", e.client.svc.cmd.Process.Pid, b.ID())
	time.Sleep(time.Hour)
	os.Exit(0)
}

// TestHardDeath kills a codebridge with SIGKILL: its private Podman service
// must die with it, its warm container must exit on its own (the bootstrap's
// wait limit), and RemoveStale in the next codebridge must remove it.
func TestHardDeath(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), crashChildEnv+"="+t.TempDir(), "CODEBRIDGE_PODMAN_CRASH_IMAGE="+img)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "ready" {
		t.Fatalf("child said %q, %v", line, err)
	}
	svcPid, _ := strconv.Atoi(f[1])
	id := f[2]
	t.Cleanup(func() { c.remove(context.Background(), id) })

	child.Process.Signal(syscall.SIGKILL)
	child.Wait()

	testenv.Eventually(t, fmt.Sprintf("the child's podman service (pid %d) dies with it", svcPid), func() bool { return !processAlive(svcPid) })
	// Another codebridge on this host (another test run) may call
	// RemoveStale and remove the dead child's container at any moment.
	gone := func(err error) bool {
		if isStatus(err, 404) {
			t.Log("the container was removed by another process's RemoveStale")
			return true
		}
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	st, err := c.inspect(t.Context(), id)
	if gone(err) {
		return
	}
	t.Logf("warm container right after the crash: %+v", st)
	// Podman tells when it stops; the minute only stops a broken run from
	// hanging.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := (&Container{c: c, ID: id}).Wait(ctx); err != nil {
		if _, ierr := c.inspect(t.Context(), id); gone(ierr) {
			return
		}
		t.Fatalf("warm container did not stop on its own after its owner died (wait limit 3 s): %v", err)
	}
	n, err := c.RemoveStale(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.inspect(t.Context(), id); !isStatus(err, 404) {
		t.Errorf("dead owner's container not removed by RemoveStale (removed %d): %v", n, err)
	}
}
