package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// Nothing is left behind, whatever ends codebridge: its containers end when
// their streams end and Podman removes them, so neither SIGKILL nor many
// codebridge processes stopping at once leave a container, a socket or its
// folder.

// TestSIGKILLLeavesNothing kills codebridge with SIGKILL while its session's
// code sleeps in a run and its warm container waits for a session: both
// containers end by themselves (exit code 0: not killed, not swept by
// another codebridge's start) and Podman removes them; no socket folder is
// left in the state directory. For the unix-socket stream and Podman's
// attach stream.
func TestSIGKILLLeavesNothing(t *testing.T) {
	requirePodman(t)
	for _, stream := range []string{"socket", "attach"} {
		t.Run(stream, func(t *testing.T) {
			state := t.TempDir()
			b := startBridge(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_STATE_DIR="+state, "MCP_BRIDGE_SANDBOX_STREAM="+stream,
				"MCP_BRIDGE_WARM_CONTAINERS=1", "MCP_BRIDGE_MAX_TIMEOUT=600", "MCP_BRIDGE_TIMEOUT=600"))
			since := time.Now().Add(-time.Minute)
			session := b.sandboxID(t)
			// The session's container and the warm one started after it.
			var ids []string
			testenv.Eventually(t, "codebridge has a session's and a warm container", func() bool {
				ids = containersOf(t, b.pid)
				return len(ids) == 2
			})
			// The call ends with an error when codebridge dies.
			go b.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "import time\ntime.sleep(600)"}})
			testenv.Eventually(t, "the session's code sleeps", func() bool { return sleeping(t, session) })

			// A socket's folder goes once its container has connected;
			// a codebridge killed before leaves it to the next one's start.
			testenv.Eventually(t, "both containers have connected to their sockets", func() bool { return len(socketFolders(t, state)) == 0 })

			kids := descendants(b.pid)
			killed := time.Now()
			if err := b.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if left := containersLeft(t, b.pid); len(left) > 0 {
				t.Fatalf("containers of the killed codebridge still there %v after SIGKILL: %v", time.Since(killed).Round(time.Second), left)
			}
			t.Logf("%d containers gone %v after SIGKILL", len(ids), time.Since(killed).Round(time.Millisecond))
			for id, code := range diedCodes(t, since, ids) {
				if code != "0" {
					t.Errorf("container %.12s exited with code %s, want 0: it did not end by itself when its stream ended", id, code)
				}
			}
			if left := socketFolders(t, state); len(left) > 0 {
				t.Errorf("socket folders left behind: %v", left)
			}
			testenv.Eventually(t, "the Podman service codebridge started exits once idle", func() bool {
				return !slices.ContainsFunc(kids, processAlive)
			})
		})
	}
}

// sleeping reports whether the Python of the container with this short id
// sleeps in the kernel (time.sleep).
func sleeping(t testing.TB, short string) bool {
	t.Helper()
	out, err := exec.Command(testenv.EngineCLI(t), "inspect", "--format", "{{.State.Pid}}", short).Output()
	if err != nil {
		t.Fatalf("%s inspect %s: %v", testenv.Engine(), short, err)
	}
	init, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || init <= 0 {
		t.Fatalf("container %s has no process: %q", short, out)
	}
	for _, p := range append(descendants(init), init) {
		if wchan, err := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", p)); err == nil && strings.Contains(string(wchan), "nanosleep") {
			return true
		}
	}
	return false
}

// diedCodes returns, by the ids given (short or full), the exit code Podman
// recorded for each of these containers that died since then.
func diedCodes(t testing.TB, since time.Time, ids []string) map[string]string {
	t.Helper()
	args := []string{"events", "--stream=false", "--since", since.Format(time.RFC3339), "--filter", "event=died", "--format", "{{.ID}} {{.ContainerExitCode}}"}
	if testenv.Engine() == "docker" {
		args = []string{"events", "--since", since.Format(time.RFC3339), "--until", time.Now().Format(time.RFC3339Nano), "--filter", "event=die",
			"--format", `{{.ID}} {{index .Actor.Attributes "exitCode"}}`}
	}
	for _, id := range ids {
		args = append(args, "--filter", "container="+id)
	}
	out, err := exec.Command(testenv.EngineCLI(t), args...).Output()
	if err != nil {
		t.Fatalf("%s events: %v", testenv.Engine(), err)
	}
	codes := map[string]string{}
	for line := range strings.Lines(string(out)) {
		full, code, _ := strings.Cut(strings.TrimSpace(line), " ")
		for _, id := range ids {
			if strings.HasPrefix(full, id) {
				codes[id] = code
			}
		}
	}
	for _, id := range ids {
		if _, ok := codes[id]; !ok {
			t.Errorf("%s recorded no exit of container %.12s", testenv.Engine(), id)
		}
	}
	return codes
}

// socketFolders lists the socket folders in a state directory.
func socketFolders(t testing.TB, state string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(state, "channels"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		dirs = append(dirs, filepath.Join(state, "channels", e.Name()))
	}
	return dirs
}

// siblingsEnv names how many stdio codebridge processes
// TestSiblingsCloseAtOnce runs; CI's end-to-end phase without the race
// detector runs 50.
const siblingsEnv = "CODEBRIDGE_TEST_SIBLINGS"

// TestSiblingsCloseAtOnce: many stdio codebridge processes, each with a
// session that ran code and a warm container, whose clients all close at
// once as the TypeScript SDK does (end stdin, 2 s later SIGTERM, 2 s later
// SIGKILL), as when an editor quits. Every codebridge exits 0 before its
// client would signal it, and nothing is left: no container, no Podman
// service, no socket folder.
func TestSiblingsCloseAtOnce(t *testing.T) {
	requirePodman(t)
	n := 10 // under the race detector, beside the rest of the suite, and in -short's quick loop
	if !raceEnabled && !testing.Short() {
		n = 50
	}
	if v := os.Getenv(siblingsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a count", siblingsEnv, v)
		}
	}
	bridges := make([]*stdioBridge, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // starting them all at once only measures the start-up
	for i := range bridges {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			bridges[i] = startStdioBridge(t)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var pids, kids []int
	var owners []string
	for _, b := range bridges {
		pids = append(pids, b.cmd.Process.Pid)
		owners = append(owners, ownerLabel(b.cmd.Process.Pid))
		kids = append(kids, descendants(b.cmd.Process.Pid)...)
	}
	testenv.Eventually(t, "every codebridge has a session's and a warm container", func() bool {
		return len(ownedContainers(t, owners...)) == 2*n
	})

	closed := time.Now()
	for _, b := range bridges {
		b.stdin.Close()
	}
	type ending struct {
		after  time.Duration
		signal string // what the client had to send, "" when none
		err    error
	}
	endings := make([]ending, n)
	for i, b := range bridges {
		wg.Go(func() {
			endings[i].signal, endings[i].err = b.closeLikeTypeScript()
			endings[i].after = time.Since(closed)
		})
	}
	wg.Wait()
	var slowest time.Duration
	for i, e := range endings {
		slowest = max(slowest, e.after)
		if e.signal != "" || e.err != nil {
			t.Errorf("codebridge %d (pid %d): its client had to send %s; it ended %v after stdin closed with %v\nstderr tail:\n%s",
				i, bridges[i].cmd.Process.Pid, e.signal, e.after.Round(time.Millisecond), e.err, tailLines(bridges[i].stderr.String(), 15))
		}
	}
	t.Logf("%d codebridge processes ended, the slowest %v after their stdin closed", n, slowest.Round(time.Millisecond))

	if left := containersLeft(t, pids...); len(left) > 0 {
		t.Fatalf("%d containers still there %v after the clients closed: %v", len(left), time.Since(closed).Round(time.Second), left)
	}
	t.Logf("all %d containers gone %v after the clients closed", 2*n, time.Since(closed).Round(time.Millisecond))
	for _, p := range leftBehind(t, kids) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		t.Errorf("process %d (%s) left after its codebridge exited", p, strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	for _, b := range bridges {
		if left := socketFolders(t, b.state); len(left) > 0 {
			t.Errorf("socket folders left behind: %v", left)
		}
	}
}

// stdioBridge is a codebridge whose stdin the test closes itself, as the
// TypeScript SDK's client does.
type stdioBridge struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	state  string
	exited chan struct{} // closed when the process has exited; cmd.ProcessState is set then
}

// startStdioBridge starts codebridge, connects a client and runs code in its
// session.
func startStdioBridge(t *testing.T) *stdioBridge {
	t.Helper()
	b := &stdioBridge{stderr: new(syncBuffer), state: t.TempDir(), exited: make(chan struct{})}
	b.cmd = exec.Command(binary(t))
	b.cmd.Env = bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_STATE_DIR="+b.state, "MCP_BRIDGE_WARM_CONTAINERS=1", "MCP_BRIDGE_LOG_LEVEL=info")
	b.cmd.Stderr = b.stderr
	var err error
	if b.stdin, err = b.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := b.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		b.cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(func() {
		b.cmd.Process.Kill()
		<-b.exited
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "sibling", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: b.stdin}, nil)
	if err != nil {
		t.Errorf("connecting to codebridge: %v\nstderr:\n%s", err, b.stderr.String())
		return b
	}
	t.Cleanup(func() { cs.Close() })
	if r := runPython(t, cs, map[string]any{"code": "print(1)"}); r.IsError || r.Out.Stdout != "1\n" {
		t.Errorf("print(1): %s\nstderr tail:\n%s", r.Text, tailLines(b.stderr.String(), 30))
	}
	return b
}

// closeLikeTypeScript finishes what the TypeScript SDK's stdio client does
// after it ends stdin: wait 2 s for the process to exit, then SIGTERM, 2 s
// more, then SIGKILL. It returns the signal it had to send ("" for none)
// and how the process ended.
func (b *stdioBridge) closeLikeTypeScript() (string, error) {
	sent := ""
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case <-b.exited:
			return sent, exitErr(b.cmd.ProcessState)
		case <-time.After(2 * time.Second):
		}
		if sent == "" {
			sent = sig.String()
		}
		b.cmd.Process.Signal(sig)
	}
	<-b.exited
	return sent, exitErr(b.cmd.ProcessState)
}

func exitErr(st *os.ProcessState) error {
	if st.Success() {
		return nil
	}
	return fmt.Errorf("exit status: %v", st)
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "")
}
