package podman

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"

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
	e := NewEngine(EngineOptions{StateDir: dir, Image: os.Getenv("CODEBRIDGE_PODMAN_CRASH_IMAGE"), serviceIdle: time.Second, Spec: confine.Spec{
		Command: python.Command(),
		Env:     map[string]string{python.WaitLimitEnv: "600"}, // not what ends it
	}})
	b, err := e.Start(context.Background(), sandbox.Wait{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ready", e.client().svc.child.cmd.Process.Pid, b.ID())
	time.Sleep(time.Hour)
	os.Exit(0)
}

// TestHardDeath kills a codebridge with SIGKILL: the Podman service it
// started, which no other codebridge uses, must exit once idle, and its warm
// container must end with its stream and be removed by Podman, with no
// codebridge to remove it.
func TestHardDeath(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	child, f := testenv.Child(t, crashChildEnv+"="+t.TempDir(), "CODEBRIDGE_PODMAN_CRASH_IMAGE="+img)
	if len(f) != 2 {
		t.Fatalf("the child said ready %q; want its service's pid and its container", f)
	}
	svcPid, _ := strconv.Atoi(f[0])
	id := f[1]
	t.Cleanup(func() { c.remove(context.Background(), id) })

	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	killed := time.Now()

	testenv.Eventually(t, fmt.Sprintf("the child's podman service (pid %d) exits once idle", svcPid), func() bool {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(svcPid) + "/stat")
		f := strings.Fields(string(data[min(len(data), bytes.LastIndexByte(data, ')')+1):]))
		return err != nil || len(f) > 0 && f[0] == "Z" // gone, or a zombie its new parent has not reaped
	})
	testenv.Eventually(t, "the warm container is removed", func() bool {
		_, err := c.inspect(t.Context(), id)
		if err != nil && !isGone(err) {
			t.Fatal(err)
		}
		return err != nil
	})
	t.Logf("the warm container was removed %v after its codebridge was killed", time.Since(killed).Round(time.Millisecond))
	// Another codebridge's RemoveStale would have killed it (exit code 137).
	code, err := (&APIContainer{c: c, id: id, started: killed}).Wait(t.Context())
	if err != nil || code != 0 {
		t.Errorf("the warm container's exit: code %d, %v; want 0 (it ended by itself)", code, err)
	}
}
