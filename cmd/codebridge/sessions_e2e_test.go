package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/kube/kubetest"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// tsStep is one step of testdata/ts_sessions.mjs.
type tsStep struct {
	Code    string  `json:"code,omitempty"`
	Timeout float64 `json:"timeout,omitempty"`
	Reset   bool    `json:"reset,omitempty"`
	Pause   bool    `json:"pause,omitempty"`
}

// tsResult is one line the script prints: connected (with codebridge's pid),
// paused, or a run_python step's result.
type tsResult struct {
	Connected bool   `json:"connected"`
	PID       int    `json:"pid"`
	Text      string `json:"text"`
	IsError   bool   `json:"isError"`
	Paused    bool   `json:"paused"`
	Out       struct {
		Stdout string `json:"stdout"`
		Error  *struct {
			Kind, Type, Message string
		} `json:"error"`
		Session struct {
			ID     string `json:"id"`
			Run    int    `json:"run"`
			New    bool   `json:"new"`
			Reason string `json:"reason"`
			Ended  string `json:"ended"`
		} `json:"session"`
	} `json:"out"`
}

// tsSessions runs steps through the official TypeScript client against the
// built binary. At a pause step it calls onPause with codebridge's pid and
// the results so far, then lets the script go on.
func tsSessions(t *testing.T, env []string, steps []tsStep, onPause func(pid int, results []tsResult)) []tsResult {
	t.Helper()
	requirePodman(t)
	results, _ := tsPausing(t, "ts_sessions.mjs", env, steps, steps, onPause)
	return results
}

// stepLine is a line of a script that runs steps (ts_steps.mjs): R, which
// embeds [tsResult] and adds what the script saw.
type stepLine[R any] interface {
	*R
	line() *tsResult
}

func (r *tsResult) line() *tsResult { return r }

// tsPausing runs testdata/script with the built binary and plan, a script
// that prints {"connected": true, "pid": ...} and then the lines of steps
// (ts_steps.mjs). At a pause step it calls onPause (if set) with
// codebridge's pid and the results so far, then lets the script go on. It
// returns the results and the script's stderr (codebridge's too).
func tsPausing[R any, P stepLine[R]](t *testing.T, script string, env []string, plan any, steps []tsStep, onPause func(pid int, results []R)) ([]R, string) {
	t.Helper()
	raw, _ := json.Marshal(plan)
	var (
		pid     int
		results []R
		errOut  string
	)
	runNodeScript(t, script, []string{binary(t), string(raw)}, env, func(line []byte) bool {
		var r R
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("script line %q: %v", line, err)
		}
		switch l := P(&r).line(); {
		case l.Connected:
			pid = l.PID
		case l.Paused:
			if onPause != nil {
				onPause(pid, results)
			}
			return true
		default:
			results = append(results, r)
		}
		return false
	}, func(stderr string) {
		errOut = stderr
		if len(results) != countRuns(steps) {
			t.Fatalf("%s: %d results, want %d\nstderr: %s", script, len(results), countRuns(steps), stderr)
		}
	})
	return results, errOut
}

// runNodeScript runs testdata/script with node and the TypeScript SDK,
// passing each line it prints to line; when line returns true (a pause), the
// script is told to go on. done gets the script's stderr once it exited
// cleanly; a failed exit fails t.
func runNodeScript(t *testing.T, script string, args, env []string, line func([]byte) bool, done func(stderr string)) {
	t.Helper()
	clients := testenv.NPMClients(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "install Node.js 20+")
	}
	path, _ := filepath.Abs(filepath.Join("testdata", script))
	cmd := exec.Command(node, append([]string{path}, args...)...)
	cmd.Env = append(env, "CODEBRIDGE_TEST_NPM_CLIENTS="+clients)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if line(sc.Bytes()) {
			io.WriteString(stdin, "go\n")
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\nstderr: %s", script, err, stderr.String())
	}
	done(stderr.String())
}

// nodeResults runs testdata/script, which prints one JSON line per step and
// never pauses, and returns the want lines it printed.
func nodeResults[R any](t *testing.T, script string, args, env []string, want int) []R {
	t.Helper()
	var results []R
	runNodeScript(t, script, args, env, func(line []byte) bool {
		var r R
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("script line %q: %v", line, err)
		}
		results = append(results, r)
		return false
	}, func(stderr string) {
		if len(results) != want {
			t.Fatalf("%s: %d results, want %d\nstderr: %s", script, len(results), want, stderr)
		}
	})
	return results
}

func countRuns(steps []tsStep) int {
	n := 0
	for _, s := range steps {
		if !s.Pause {
			n++
		}
	}
	return n
}

// containerGone waits until the engine no longer knows the container whose short
// id (the sandbox's hostname) is id.
func containerGone(t *testing.T, id string) {
	t.Helper()
	if len(id) < 12 {
		t.Fatalf("not a container id: %q", id)
	}
	exists := func() bool { return testenv.ContainerExists(t, id) }
	if kubetest.Enabled() {
		exists = func() bool { return kubetest.PodExists(t, id) }
	}
	deadline := time.Now().Add(60 * time.Second)
	for exists() {
		if time.Now().After(deadline) {
			t.Fatalf("container %s still exists 60 s after its session ended", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hostname prints the sandbox's hostname, which Podman sets to the
// container's short id, as the first line of a step's output.
const hostname = "import socket\nprint(socket.gethostname())\n"

// host is the container a step ran in: the first line its hostname printed.
func host(r tsResult) string { return strings.SplitN(r.Out.Stdout, "\n", 2)[0] }

// TestSessionsThroughTypeScriptClient is issue 8's scenario, as an agent
// using the official TypeScript SDK sees it.
func TestSessionsThroughTypeScriptClient(t *testing.T) {
	env := bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_MEMORY=64m")
	r := tsSessions(t, env, []tsStep{
		{Code: hostname + "x = 41"},                // 0
		{Pause: true},                              // the session's container is this codebridge's
		{Code: "print(x + 1)"},                     // 1
		{Code: hostname + "print(x)", Reset: true}, // 2
		{Code: "x = 7\nimport time\nwhile True: time.sleep(0.1)", Timeout: 1},                               // 3
		{Code: hostname + "print(x)"},                                                                       // 4
		{Code: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", Timeout: 1}, // 5
		{Code: hostname + "print('x' in globals())"},                                                        // 6
		{Code: "b = b'x' * (256 << 20)"},                                                                    // 7
		{Code: hostname + "print('b' in globals())"},                                                        // 8
	}, func(pid int, r []tsResult) {
		// The hostname is the id of a container this codebridge owns: the
		// checks that such containers are gone below cannot pass vacuously.
		if id := host(r[0]); !slices.Contains(containersOf(t, pid), id) {
			t.Errorf("hostname %q is not a container of codebridge %d (%v)", id, pid, containersOf(t, pid))
		}
	})
	s := func(i int) string {
		ss := r[i].Out.Session
		return fmt.Sprintf("session %s run %d new=%v reason=%q ended=%q", ss.ID, ss.Run, ss.New, ss.Reason, ss.Ended)
	}
	noNote := func(i int) {
		t.Helper()
		if strings.Contains(r[i].Text, "[session]") {
			t.Errorf("step %d kept its session but says otherwise: %q", i, r[i].Text)
		}
	}

	// Variables live from one call to the next.
	if r[1].Out.Stdout != "42\n" || r[1].Out.Session.ID != r[0].Out.Session.ID || r[1].Out.Session.New || r[1].Out.Session.Run != 2 {
		t.Errorf("x + 1: %q in %s", r[1].Out.Stdout, s(1))
	}
	noNote(1)

	// reset: a fresh session, and the model is told.
	if e := r[2].Out.Error; e == nil || e.Type != "NameError" || !r[2].Out.Session.New || r[2].Out.Session.Reason != "reset" ||
		r[2].Out.Session.ID == r[0].Out.Session.ID || !strings.Contains(r[2].Text, "[session] started a fresh session as asked (reset)") {
		t.Errorf("after reset: %+v %s %q", e, s(2), r[2].Text)
	}
	containerGone(t, host(r[0]))

	// Code that stops when interrupted at its time limit keeps the session.
	if e := r[3].Out.Error; e == nil || e.Kind != "timeout" || r[3].Out.Session.Ended != "" || r[3].Out.Session.ID != r[2].Out.Session.ID ||
		!strings.Contains(e.Message, "variables are kept") {
		t.Errorf("interruptible timeout: %+v %s", e, s(3))
	}
	noNote(3)
	if r[4].Out.Stdout != host(r[2])+"\n7\n" || r[4].Out.Session.ID != r[2].Out.Session.ID || r[4].Out.Session.New {
		t.Errorf("after an interrupted run: %q %s (want session %s and container %s kept)", r[4].Out.Stdout, s(4), r[2].Out.Session.ID, host(r[2]))
	}
	noNote(4)

	// Code that ignores the interrupt has its container killed.
	if e := r[5].Out.Error; e == nil || e.Kind != "timeout" || r[5].Out.Session.Ended != "timeout" ||
		!strings.Contains(r[5].Text, "[session] this run ended the session (timeout)") {
		t.Errorf("stuck code: %+v %s %q", e, s(5), r[5].Text)
	}
	if r[6].Out.Stdout != host(r[6])+"\nFalse\n" || !r[6].Out.Session.New || r[6].Out.Session.Reason != "timeout" ||
		r[6].Out.Session.ID == r[2].Out.Session.ID || !strings.Contains(r[6].Text, "the previous one ended (timeout)") {
		t.Errorf("after a killed session: %q %s %q", r[6].Out.Stdout, s(6), r[6].Text)
	}
	containerGone(t, host(r[2]))

	// Out of memory ends the session.
	if e := r[7].Out.Error; e == nil || e.Kind != "out_of_memory" || r[7].Out.Session.Ended != "out_of_memory" ||
		!strings.Contains(r[7].Text, "[session] this run ended the session (out of memory)") {
		t.Errorf("out of memory: %+v %s %q", e, s(7), r[7].Text)
	}
	if r[8].Out.Stdout != host(r[8])+"\nFalse\n" || !r[8].Out.Session.New || r[8].Out.Session.Reason != "out_of_memory" ||
		!strings.Contains(r[8].Text, "the previous one ended (out of memory)") {
		t.Errorf("after out of memory: %q %s %q", r[8].Out.Stdout, s(8), r[8].Text)
	}
	containerGone(t, host(r[6]))
}

// TestIdleSessionExpires: an idle session ends and its container is removed;
// the next call is told.
func TestIdleSessionExpires(t *testing.T) {
	env := bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_SESSION_IDLE_TIMEOUT=2s")
	r := tsSessions(t, env, []tsStep{{Code: hostname + "x = 1"}, {Pause: true}, {Code: "print('x' in globals())"}},
		func(_ int, r []tsResult) { containerGone(t, host(r[0])) })
	if r[1].Out.Stdout != "False\n" || !r[1].Out.Session.New || r[1].Out.Session.Reason != "idle" ||
		!strings.Contains(r[1].Text, "the previous one ended (idle)") {
		t.Errorf("after idle expiry: %q %+v %q", r[1].Out.Stdout, r[1].Out.Session, r[1].Text)
	}
}

// TestSessionsOff: with MCP_BRIDGE_SESSIONS=0 calls share nothing: each runs
// in a container of its own, ended before the call returns and then removed
// by Podman.
func TestSessionsOff(t *testing.T) {
	r := tsSessions(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_SESSIONS=0"), []tsStep{
		{Code: hostname + "x = 1"}, {Code: hostname + "print('x' in globals())"}, {Pause: true},
	}, func(pid int, r []tsResult) {
		for _, id := range []string{host(r[0]), host(r[1])} {
			containerGone(t, id)
		}
	})
	if r[1].Out.Stdout != host(r[1])+"\nFalse\n" || host(r[0]) == host(r[1]) {
		t.Errorf("second call: %q after %q: want another container without x", r[1].Out.Stdout, r[0].Out.Stdout)
	}
	for i := range r {
		if ss := r[i].Out.Session; !ss.New || ss.Reason != "sessions_off" || strings.Contains(r[i].Text, "[session]") {
			t.Errorf("call %d: %+v %q", i, ss, r[i].Text)
		}
	}
}
