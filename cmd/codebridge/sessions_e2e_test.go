package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// tsStep is one step of testdata/ts_sessions.mjs.
type tsStep struct {
	Code    string  `json:"code,omitempty"`
	Timeout float64 `json:"timeout,omitempty"`
	Reset   bool    `json:"reset,omitempty"`
	Pause   bool    `json:"pause,omitempty"`
}

// tsResult is what the script reports for a run_python step.
type tsResult struct {
	Text    string `json:"text"`
	IsError bool   `json:"isError"`
	Paused  bool   `json:"paused"`
	Out     struct {
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
// built binary. At a pause step it calls onPause, then lets the script go on.
func tsSessions(t *testing.T, env []string, steps []tsStep, onPause func(results []tsResult)) []tsResult {
	t.Helper()
	requirePodman(t)
	testenv.NPMModule(t, "@modelcontextprotocol/sdk")
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "install Node.js 20+")
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "ts_sessions.mjs"))
	plan, _ := json.Marshal(steps)
	cmd := exec.Command(node, script, binary(t), string(plan))
	cmd.Env = append(env, "CODEBRIDGE_TEST_NPM_DIR="+testenv.NPMDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var results []tsResult
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r tsResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("script line %q: %v", sc.Text(), err)
		}
		if r.Paused {
			onPause(results)
			io.WriteString(stdin, "go\n")
			continue
		}
		results = append(results, r)
	}
	if err := cmd.Wait(); err != nil || len(results) != countRuns(steps) {
		t.Fatalf("ts client: %v after %d results\nstderr: %s", err, len(results), stderr.String())
	}
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

// containerGone waits until Podman no longer knows the container whose short
// id (the sandbox's hostname) is id.
func containerGone(t *testing.T, id string) {
	t.Helper()
	if len(id) < 12 {
		t.Fatalf("not a container id: %q", id)
	}
	deadline := time.Now().Add(60 * time.Second)
	for exec.Command("podman", "container", "exists", id).Run() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("container %s still exists 60 s after its session ended", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const hostname = "import socket\nprint(socket.gethostname())\n"

// TestSessionsThroughTypeScriptClient is issue 8's scenario, as an agent
// using the official TypeScript SDK sees it.
func TestSessionsThroughTypeScriptClient(t *testing.T) {
	env := bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_MEMORY=96m")
	r := tsSessions(t, env, []tsStep{
		{Code: hostname + "x = 41"},                                           // 0
		{Code: "print(x + 1)"},                                                // 1
		{Code: hostname + "print(x)", Reset: true},                            // 2
		{Code: "x = 7\nimport time\nwhile True: time.sleep(0.1)", Timeout: 1}, // 3
		{Code: "print(x)"},                                                    // 4
		{Code: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", Timeout: 1}, // 5
		{Code: hostname + "print('x' in globals())"},                                                        // 6
		{Code: "b = b'x' * (512 << 20)"},                                                                    // 7
		{Code: hostname + "print('b' in globals())"},                                                        // 8
	}, nil)
	id := func(i int) string { return strings.SplitN(r[i].Out.Stdout, "\n", 2)[0] }
	s := func(i int) string {
		ss := r[i].Out.Session
		return strings.Join([]string{ss.ID, ss.Reason, ss.Ended}, "|")
	}

	if r[1].Out.Stdout != "42\n" || r[1].Out.Session.ID != r[0].Out.Session.ID || r[1].Out.Session.New {
		t.Errorf("x + 1: %q in session %s", r[1].Out.Stdout, s(1))
	}
	if e := r[2].Out.Error; e == nil || e.Type != "NameError" || !r[2].Out.Session.New || r[2].Out.Session.Reason != "reset" ||
		!strings.Contains(r[2].Text, "[session] started a fresh session as asked (reset)") {
		t.Errorf("after reset: %+v %s %q", e, s(2), r[2].Text)
	}
	containerGone(t, id(0))

	if e := r[3].Out.Error; e == nil || e.Kind != "timeout" || r[3].Out.Session.Ended != "" {
		t.Errorf("interruptible timeout: %+v %s", e, s(3))
	}
	if r[4].Out.Stdout != "7\n" || r[4].Out.Session.ID != r[2].Out.Session.ID {
		t.Errorf("after an interrupted run: %q %s (want session %s kept)", r[4].Out.Stdout, s(4), r[2].Out.Session.ID)
	}

	if e := r[5].Out.Error; e == nil || e.Kind != "timeout" || r[5].Out.Session.Ended != "timeout" {
		t.Errorf("stuck code: %+v %s", e, s(5))
	}
	if r[6].Out.Stdout != id(6)+"\nFalse\n" || !r[6].Out.Session.New || r[6].Out.Session.Reason != "timeout" ||
		!strings.Contains(r[6].Text, "the previous one ended (timeout)") {
		t.Errorf("after a killed session: %q %s %q", r[6].Out.Stdout, s(6), r[6].Text)
	}
	containerGone(t, id(2))

	if e := r[7].Out.Error; e == nil || e.Kind != "out_of_memory" || r[7].Out.Session.Ended != "out_of_memory" {
		t.Errorf("out of memory: %+v %s", e, s(7))
	}
	if !strings.HasSuffix(r[8].Out.Stdout, "False\n") || r[8].Out.Session.Reason != "out_of_memory" || !r[8].Out.Session.New {
		t.Errorf("after out of memory: %q %s", r[8].Out.Stdout, s(8))
	}
	containerGone(t, id(6))
}

// TestIdleSessionExpires: an idle session ends and its container is removed;
// the next call is told.
func TestIdleSessionExpires(t *testing.T) {
	env := bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_SESSION_IDLE_TIMEOUT=2s")
	var first string
	r := tsSessions(t, env, []tsStep{{Code: hostname + "x = 1"}, {Pause: true}, {Code: "print('x' in globals())"}},
		func(results []tsResult) {
			first = strings.TrimSpace(results[0].Out.Stdout)
			containerGone(t, first)
		})
	if r[1].Out.Stdout != "False\n" || !r[1].Out.Session.New || r[1].Out.Session.Reason != "idle" {
		t.Errorf("after idle expiry: %q %+v", r[1].Out.Stdout, r[1].Out.Session)
	}
}

// TestSessionsOff: with MCP_BRIDGE_SESSIONS=0 calls share nothing.
func TestSessionsOff(t *testing.T) {
	r := tsSessions(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_SESSIONS=0"), []tsStep{
		{Code: "x = 1"}, {Code: "print('x' in globals())"},
	}, nil)
	if r[1].Out.Stdout != "False\n" || r[1].Out.Session.Reason != "sessions_off" {
		t.Errorf("sessions off: %q %+v", r[1].Out.Stdout, r[1].Out.Session)
	}
}
