package python

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// serveLocal starts the bootstrap in serve mode ([ServeEnv]) as a local
// process and returns the abstract socket it serves on, and the process.
func serveLocal(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	name := serveName()
	return name, serveAt(t, name)
}

// serveName is a name of an abstract socket no other test uses.
func serveName() string {
	return fmt.Sprintf("codebridge-test-%d-%d", os.Getpid(), time.Now().UnixNano())
}

// serveAt starts the bootstrap in serve mode on the abstract socket name.
func serveAt(t *testing.T, name string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(testenv.Python(t), Command()[1:]...)
	cmd.Env = []string{ServeEnv + "=" + name, WaitLimitEnv + "=120"}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// dialServe connects to the socket, as the relay does, and reads the
// greeting: [confine.ServeFresh], or [confine.ServeResumed] and the runs.
func dialServe(t *testing.T, name string) (net.Conn, byte, int) {
	t.Helper()
	var conn net.Conn
	testenv.Eventually(t, "the bootstrap listens on @"+name, func() bool {
		var err error
		conn, err = net.Dial("unix", "@"+name)
		return err == nil
	})
	t.Cleanup(func() { conn.Close() })
	var hello [1]byte
	if _, err := io.ReadFull(conn, hello[:]); err != nil {
		t.Fatalf("reading the greeting: %v", err)
	}
	if hello[0] != confine.ServeResumed {
		return conn, hello[0], 0
	}
	var n [4]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		t.Fatalf("reading the runs of the greeting: %v", err)
	}
	return conn, hello[0], int(binary.BigEndian.Uint32(n[:]))
}

// TestServeResume checks the stream served in a pod, run here as a local
// process: the interpreter keeps its state across connections, a connection
// cut during a run ends that run (its pending request answered with an
// error) but not the interpreter, and a newer connection replaces the
// current one.
func TestServeResume(t *testing.T) {
	name, _ := serveLocal(t)
	conn, hello, _ := dialServe(t, name)
	if hello != confine.ServeFresh {
		t.Fatalf("first greeting %q, want %q", hello, confine.ServeFresh)
	}
	it := Start(conn, protocol.Init{}, Limits{})
	if res, err := it.Run(t.Context(), Program{Code: "x = 41"}, &fakeHost{}, time.Minute); err != nil || res.Error != nil {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	it.Close()

	conn, hello, runs := dialServe(t, name)
	if hello != confine.ServeResumed || runs != 1 {
		t.Fatalf("second greeting %q with %d runs, want %q with 1", hello, runs, confine.ServeResumed)
	}
	it = Resume(conn, runs, Limits{})
	res, err := it.Run(t.Context(), Program{Code: "x += 1\nprint(x)"}, &fakeHost{}, time.Minute)
	if err != nil || res.Stdout != "42\n" {
		t.Fatalf("resumed run: %+v, %v", res, err)
	}

	// A run waits on a request when its connection is cut.
	asked := make(chan struct{})
	host := &fakeHost{handle: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		close(asked)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	ran := make(chan error, 1)
	go func() {
		_, err := it.Run(t.Context(), Program{Code: "search_tool_docs_sync('x')\nx = 0"}, host, time.Minute)
		ran <- err
	}()
	<-asked
	it.Close()
	if err := <-ran; !errors.Is(err, ErrClosed) {
		t.Logf("the cut run ended with %v", err)
	}

	conn, hello, runs = dialServe(t, name)
	if hello != confine.ServeResumed || runs != 3 {
		t.Fatalf("greeting after a cut run %q with %d runs, want %q with 3", hello, runs, confine.ServeResumed)
	}
	it = Resume(conn, runs, Limits{})
	res, err = it.Run(t.Context(), Program{Code: "print(x)"}, &fakeHost{}, time.Minute)
	if err != nil || res.Stdout != "42\n" {
		t.Fatalf("run after a cut run: %+v %+v, %v", res, res.Error, err)
	}

	// A newer connection replaces this one.
	newer, hello, runs := dialServe(t, name)
	if hello != confine.ServeResumed || runs != 4 {
		t.Fatalf("greeting of a newer connection %q with %d runs, want %q with 4", hello, runs, confine.ServeResumed)
	}
	<-it.Done() // the replaced connection ended
	it.Close()
	it = Resume(newer, runs, Limits{})
	defer it.Close()
	res, err = it.Run(t.Context(), Program{Code: "print(x)"}, &fakeHost{}, time.Minute)
	if err != nil || res.Stdout != "42\n" {
		t.Fatalf("run on the newer connection: %+v, %v", res, err)
	}
}

// TestServeWaitLimit checks that an interpreter serving its stream exits
// when nobody connects for its wait limit.
func TestServeWaitLimit(t *testing.T) {
	name := fmt.Sprintf("codebridge-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(testenv.Python(t), Command()[1:]...)
	cmd.Env = []string{ServeEnv + "=" + name, WaitLimitEnv + "=0.2"}
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("bootstrap = %v, output %q; want a quiet exit 0", err, out)
	}
}

// TestServeWarmEndsWithConnection: an interpreter that has served no run
// (a warm one) exits when its connection ends, for its replica is gone or
// done with it; one that has served a run waits for the next connection.
func TestServeWarmEndsWithConnection(t *testing.T) {
	name, cmd := serveLocal(t)
	conn, _, _ := dialServe(t, name)
	it := Start(conn, protocol.Init{}, Limits{})
	it.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the warm interpreter: %v, want exit 0", err)
	}
}

// TestServeStartFrameWaitLimit: an interpreter with no wait limit in its
// environment (a pod of a warm pool, which waits for its claim however
// long) takes the one of its start frame for the wait between runs, so a
// session nobody continues still ends.
func TestServeStartFrameWaitLimit(t *testing.T) {
	name := fmt.Sprintf("codebridge-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(testenv.Python(t), Command()[1:]...)
	cmd.Env = []string{ServeEnv + "=" + name}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	conn, _, _ := dialServe(t, name)
	it := Start(conn, protocol.Init{WaitLimit: 0.2}, Limits{})
	defer it.Close()
	if res, err := it.Run(t.Context(), Program{Code: "x = 1"}, &fakeHost{}, time.Minute); err != nil || res.Error != nil {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if err := cmd.Wait(); err != nil { // with the connection still open
		t.Errorf("the interpreter after its start frame's wait limit: %v, want exit 0", err)
	}
}

// TestRelayWaitsForInterpreter: the relay, started before the interpreter
// listens (a pod is running once its process starts), connects once it
// does, and relays the greeting, then a run.
func TestRelayWaitsForInterpreter(t *testing.T) {
	name := serveName()
	argv := RelayCommand()
	relay := exec.Command(testenv.Python(t), append(argv[1:], name)...)
	relay.Stderr = os.Stderr
	stdin, err := relay.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := relay.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Process.Kill(); relay.Wait() })
	// Nothing listens until the relay has its socket, which it creates just
	// before it connects: it is refused at least once (a relay that then
	// exits has no descriptors left, and the greeting below fails).
	fds := fmt.Sprintf("/proc/%d/fd", relay.Process.Pid)
	testenv.Eventually(t, "the relay has a socket", func() bool {
		ents, err := os.ReadDir(fds)
		if err != nil || len(ents) == 0 {
			return true
		}
		for _, e := range ents {
			if l, _ := os.Readlink(fds + "/" + e.Name()); strings.HasPrefix(l, "socket:") {
				return true
			}
		}
		return false
	})
	serveAt(t, name)
	var hello [1]byte
	if _, err := io.ReadFull(stdout, hello[:]); err != nil || hello[0] != confine.ServeFresh {
		t.Fatalf("greeting through the relay: %q, %v; want %q", hello, err, confine.ServeFresh)
	}
	it := Start(struct {
		io.Reader
		io.WriteCloser
	}{stdout, stdin}, protocol.Init{}, Limits{})
	defer it.Close()
	if res, err := it.Run(t.Context(), Program{Code: "print(6 * 7)"}, &fakeHost{}, time.Minute); err != nil || res.Error != nil || res.Stdout != "42\n" {
		t.Fatalf("run through the relay: %+v, %v", res, err)
	}
}
