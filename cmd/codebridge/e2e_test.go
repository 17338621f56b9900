package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/kube/kubetest"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// These tests build the real binary and drive it as an agent would: a real MCP
// client launching it as a subprocess, a real Podman, real containers.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	if os.Getenv(pinServerEnv) != "" {
		runPinServer()
		return
	}
	if os.Getenv(argServerEnv) != "" {
		runArgServer()
		return
	}
	if os.Getenv(fanoutServerEnv) != "" {
		runFanoutServer()
		return
	}
	if os.Getenv(conformanceTargetEnv) != "" {
		runConformanceTarget()
		return
	}
	if os.Getenv(conformanceBrowserEnv) != "" {
		os.Exit(runConformanceBrowser())
	}
	if os.Getenv(conformanceClientEnv) != "" {
		os.Exit(runConformanceClient())
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds cmd/codebridge once per test process, without cgo, as
// `go run ...@latest` would.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		recordSources()
		binDir, buildErr = os.MkdirTemp("", "codebridge-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "codebridge")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// recordSources opens every source file of the module, which makes them inputs
// of this test binary for go test's cache: the binary these tests run is built
// in a subprocess, whose reads the cache cannot see.
func recordSources() {
	filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" && path != "testdata") {
			return filepath.SkipDir
		}
		switch filepath.Ext(path) {
		case ".go", ".py", ".md", ".mod", ".sum":
			if f, err := os.Open(path); err == nil {
				f.Close()
			}
		}
		return nil
	})
}

// bridgeEnv is the environment of a codebridge under test: its own config and
// state folders, so tests never touch the user's ~/MCPs.
func bridgeEnv(t testing.TB, configDir string, extra ...string) []string {
	t.Helper()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "MCP_BRIDGE_") })
	// An empty settings file, so the machine's own does not reach the test.
	file := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env = append(env,
		settings.FileEnv+"="+file,
		"MCP_BRIDGE_CONFIG_DIR="+configDir,
		"MCP_BRIDGE_STATE_DIR="+t.TempDir(),
		"MCP_BRIDGE_IMAGE="+testenv.Image(),
		"MCP_BRIDGE_ENGINE="+testenv.Engine(),
		"MCP_BRIDGE_LOG_LEVEL=debug")
	if rt := testenv.Runtime(); rt != "" { // scripts/test.sh's gVisor phase
		env = append(env, "MCP_BRIDGE_RUNTIME="+rt)
	}
	return append(env, append(engineSettings(), extra...)...)
}

// engineSettings are the settings the engine the tests run against needs
// besides its name (testenv.Engine): Kubernetes's seccomp profile.
func engineSettings() []string {
	if kubetest.Enabled() {
		return kubetest.Settings()
	}
	return nil
}

// session launches codebridge with env and connects the go-sdk client to it.
// It also returns codebridge's stderr, safe to read while codebridge writes.
func session(t testing.TB, env []string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	cs, stderr, _ := sessionProc(t, env)
	return cs, stderr
}

// shutdownGrace is how long closing a session waits for codebridge to exit
// by itself after its stdin closes, before the client transport sends
// SIGTERM (and as long again before SIGKILL). Codebridge allows itself 15 s
// to stop what it started; the transport's default of 5 s would kill it
// part-way on a loaded machine and leave containers behind.
const shutdownGrace = 30 * time.Second

// sessionProc is session, also returning the codebridge process.
func sessionProc(t testing.TB, env []string) (*mcp.ClientSession, *syncBuffer, *exec.Cmd) {
	t.Helper()
	return sessionProcWith(t, env, nil)
}

// sessionProcWith is sessionProc with a client configured by opts (nil for
// the defaults).
func sessionProcWith(t testing.TB, env []string, opts *mcp.ClientOptions) (*mcp.ClientSession, *syncBuffer, *exec.Cmd) {
	t.Helper()
	return sessionOf(t, env, e2eClient(opts))
}

// sessionOf is sessionProc with client connecting.
func sessionOf(t testing.TB, env []string, client *mcp.Client) (*mcp.ClientSession, *syncBuffer, *exec.Cmd) {
	t.Helper()
	cs, stderr, cmd, err := connectStdio(binary(t), env, client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Logf("closing: %v", err)
		}
		if t.Failed() {
			t.Logf("codebridge stderr:\n%s", stderr.String())
		}
	})
	return cs, stderr, cmd
}

// e2eClient is the tests' MCP client, configured by opts (nil for the
// defaults).
func e2eClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "codebridge-e2e", Version: "1"}, opts)
}

// connectStdio launches the codebridge binary bin with env and connects
// client to it, from any goroutine; the caller closes the session.
func connectStdio(bin string, env []string, client *mcp.Client) (*mcp.ClientSession, *syncBuffer, *exec.Cmd, error) {
	cmd := exec.Command(bin)
	cmd.Env = env
	stderr := new(syncBuffer)
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: shutdownGrace}, nil)
	if err != nil {
		return nil, stderr, cmd, fmt.Errorf("connecting to codebridge: %w\nstderr:\n%s", err, stderr.String())
	}
	return cs, stderr, cmd, nil
}

type syncBuffer = testenv.SyncBuffer

type runResult struct {
	Text     string
	IsError  bool
	Attached []mcp.Content // images and embedded resources after the text
	Out      struct {
		Stdout      string `json:"stdout"`
		Stderr      string `json:"stderr"`
		ExitCode    int    `json:"exit_code"`
		DurationMS  int64  `json:"duration_ms"`
		StdoutBytes int64  `json:"stdout_bytes"`
		Truncated   bool   `json:"stdout_truncated"`
		StderrBytes int64  `json:"stderr_bytes"`
		StderrTrunc bool   `json:"stderr_truncated"`
		Background  string `json:"background"`
		Error       *struct {
			Kind      string `json:"kind"`
			Message   string `json:"message"`
			Type      string `json:"type"`
			Traceback string `json:"traceback"`
		} `json:"error"`
		Session            *sandbox.SessionInfo `json:"session"`
		Attachments        []attachmentInfo     `json:"attachments"`
		DroppedAttachments []attachmentInfo     `json:"dropped_attachments"`
	}
}

type attachmentInfo struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	MIMEType string `json:"mime_type"`
	Bytes    int    `json:"bytes"`
	Reason   string `json:"reason"`
}

func runPython(t testing.TB, cs *mcp.ClientSession, args map[string]any) runResult {
	t.Helper()
	return callRunPython(t, cs, &mcp.CallToolParams{Name: "run_python", Arguments: args})
}

// callRunPython is runPython with the request's params given whole (e.g.
// with a progress token).
func callRunPython(t testing.TB, cs *mcp.ClientSession, params *mcp.CallToolParams) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("run_python: %v", err)
	}
	var r runResult
	r.IsError = res.IsError
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			r.Text += tc.Text
		} else {
			r.Attached = append(r.Attached, c)
		}
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &r.Out); err != nil {
		t.Fatalf("structuredContent %s: %v", raw, err)
	}
	return r
}

// requirePodman skips t (fails it in CI) when the engine the tests run
// against (testenv.Engine: Podman, Docker in scripts/test.sh's Docker phase,
// or the Kubernetes cluster of its Kubernetes phase) or its sandbox image is
// missing.
func requirePodman(t testing.TB) {
	t.Helper()
	if kubetest.Enabled() {
		kubetest.RequireImage(t, testenv.Image())
		return
	}
	testenv.RequireImage(t, testenv.Image())
}

// containersOf lists the containers that the codebridge process pid created
// (its owner label), whatever other tests run beside it.
func containersOf(t testing.TB, pid int) []string {
	t.Helper()
	return ownedContainers(t, ownerLabel(pid))
}

// ownerLabel is the owner label of the containers of codebridge process pid.
func ownerLabel(pid int) string {
	host, _ := os.Hostname()
	return host + "/" + strconv.Itoa(pid)
}

// ownedContainers lists the codebridge containers (or pods) of these owners.
func ownedContainers(t testing.TB, owners ...string) []string {
	t.Helper()
	if kubetest.Enabled() {
		var names []string
		for name, owner := range kubetest.Pods(t) {
			if slices.Contains(owners, owner) {
				names = append(names, name)
			}
		}
		return names
	}
	var ids []string
	for id, owner := range testenv.ManagedContainers(t) {
		if slices.Contains(owners, owner) {
			ids = append(ids, id)
		}
	}
	return ids
}

// containersLeft waits until none of the containers of these codebridge
// processes remain and returns those still there after a minute. A
// container ends with its stream and Podman then removes it, so a
// codebridge that has exited does not wait for that; the minute is a hang
// guard for a loaded machine, not a measure.
func containersLeft(t testing.TB, pids ...int) []string {
	t.Helper()
	return containersLeftWithin(t, time.Minute, pids...)
}

// containersLeftWithin is containersLeft waiting up to d.
func containersLeftWithin(t testing.TB, d time.Duration, pids ...int) []string {
	t.Helper()
	var owners []string
	for _, pid := range pids {
		owners = append(owners, ownerLabel(pid))
	}
	deadline := time.Now().Add(d)
	left := ownedContainers(t, owners...)
	for ; len(left) > 0 && time.Now().Before(deadline); left = ownedContainers(t, owners...) {
		time.Sleep(50 * time.Millisecond)
	}
	return left
}

func TestRunPythonEndToEnd(t *testing.T) {
	requirePodman(t)
	cs, _ := session(t, bridgeEnv(t, t.TempDir()))

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "run_python" {
		t.Fatalf("tools/list = %v, want only run_python", tools.Tools)
	}

	tests := []struct {
		name      string
		code      string
		wantOut   string // substring of stdout
		wantText  string // substring of the text content
		wantError bool
		wantType  string
	}{
		{name: "print", code: "print('hello', 6*7)", wantOut: "hello 42\n"},
		{name: "exception", code: "x = 1\nprint('before')\n1/0", wantOut: "before\n",
			wantText: "ZeroDivisionError", wantError: true, wantType: "ZeroDivisionError"},
		{name: "syntax error", code: "def f(:\n  pass", wantText: "SyntaxError", wantError: true, wantType: "SyntaxError"},
		{name: "top-level await", code: "import asyncio\nawait asyncio.sleep(0.01)\nprint(await asyncio.gather(*(asyncio.sleep(0, result=i) for i in range(3))))",
			wantOut: "[0, 1, 2]\n"},
		{name: "os.system", code: "import os\nos.system('echo from-shell')\nprint('after')", wantOut: "from-shell\nafter\n"},
		{name: "subprocess", code: "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'print(\"child\")'])", wantOut: "child\n"},
		{name: "sys.exit", code: "import sys\nprint('bye')\nsys.exit(3)", wantOut: "bye\n", wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runPython(t, cs, map[string]any{"code": tt.code})
			if !strings.Contains(r.Out.Stdout, tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", r.Out.Stdout, tt.wantOut)
			}
			if !strings.Contains(r.Text, tt.wantText) {
				t.Errorf("text = %q, want it to contain %q", r.Text, tt.wantText)
			}
			if r.IsError != tt.wantError {
				t.Errorf("isError = %v, want %v (text %q)", r.IsError, tt.wantError, r.Text)
			}
			if tt.wantType != "" && (r.Out.Error == nil || r.Out.Error.Type != tt.wantType || !strings.Contains(r.Out.Error.Traceback, tt.wantType+":") ||
				!strings.Contains(r.Out.Error.Traceback, `File "<run_python #`)) {
				t.Errorf("error = %+v, want type %s with a traceback into <run_python>", r.Out.Error, tt.wantType)
			}
		})
	}

	t.Run("10 MB line", func(t *testing.T) {
		r := runPython(t, cs, map[string]any{"code": "import sys\nsys.stdout.write('x' * (10 * 1024 * 1024) + '\\n')\nprint('end')"})
		if r.IsError {
			t.Fatalf("isError: %s", r.Text)
		}
		if want := int64(10*1024*1024 + 1 + 4); r.Out.StdoutBytes != want {
			t.Errorf("stdout_bytes = %d, want %d", r.Out.StdoutBytes, want)
		}
		if !r.Out.Truncated || !strings.Contains(r.Out.Stdout, "truncated") {
			t.Errorf("want an explicit truncation marker, got truncated=%v and %d bytes", r.Out.Truncated, len(r.Out.Stdout))
		}
		if len(r.Out.Stdout) > 70<<10 {
			t.Errorf("stdout returned is %d bytes, over the 64 KiB cap", len(r.Out.Stdout))
		}
	})

	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		r := runPython(t, cs, map[string]any{"code": "print('spinning', flush=True)\nwhile True: pass", "timeout": 2})
		took := time.Since(start)
		if !r.IsError || r.Out.Error == nil || r.Out.Error.Kind != "timeout" {
			t.Fatalf("want a timeout error, got isError=%v %+v", r.IsError, r.Out.Error)
		}
		if !strings.Contains(r.Out.Error.Message, "2 seconds") || !strings.Contains(r.Out.Stdout, "spinning") {
			t.Errorf("message %q, stdout %q: want 'timed out after 2 seconds' and the output so far", r.Out.Error.Message, r.Out.Stdout)
		}
		t.Logf("timeout run returned after %v", took)
		if r.Out.DurationMS < 2000 || r.Out.DurationMS > took.Milliseconds() {
			t.Errorf("duration_ms = %d, want between 2000 and the %d ms the call took", r.Out.DurationMS, took.Milliseconds())
		}
		// The killed container must be gone; warm spares may exist but none may be running our code.
		next := runPython(t, cs, map[string]any{"code": "print('next')"})
		if next.IsError || next.Out.Stdout != "next\n" {
			t.Fatalf("the call after a timeout failed: %s", next.Text)
		}
	})

	t.Run("sandbox hardening", func(t *testing.T) {
		code := `
import os, errno
def attempt(f):
    try:
        f(); return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print("root_write", attempt(lambda: open("/probe", "w")))
print("tmp_write", attempt(lambda: open("/tmp/probe", "w").write("x")))
print("net", sorted(os.listdir("/sys/class/net")))
print("uid", os.getuid())
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
print("capeff", status["CapEff"].strip())
print("nonewprivs", status["NoNewPrivs"].strip())
`
		r := runPython(t, cs, map[string]any{"code": code})
		if r.IsError {
			t.Fatalf("probe failed: %s", r.Text)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(r.Out.Stdout), "\n") {
			k, v, _ := strings.Cut(line, " ")
			got[k] = v
		}
		want := map[string]string{"root_write": "EROFS", "tmp_write": "ok", "net": "['lo']", "capeff": "0000000000000000", "nonewprivs": "1"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %q, want %q", k, got[k], v)
			}
		}
		if got["uid"] == "0" || got["uid"] == "" {
			t.Errorf("uid = %q, want non-root", got["uid"])
		}
	})
}

// TestNoContainersLeftBehind checks that after codebridge exits, nothing it
// started is still there: no container, no Podman service, no child process.
func TestNoContainersLeftBehind(t *testing.T) {
	requirePodman(t)
	cs, _, cmd := sessionProc(t, bridgeEnv(t, t.TempDir()))
	r := runPython(t, cs, map[string]any{"code": "print('x')"})
	if r.IsError {
		t.Fatal(r.Text)
	}
	pid := cmd.Process.Pid
	// While codebridge runs, its session's container is visible under its
	// owner label: otherwise the check below would pass for the wrong reason.
	if n := len(containersOf(t, pid)); n == 0 {
		t.Fatal("no container of this codebridge while its session lives")
	}
	r = runPython(t, cs, map[string]any{"code": "while True: pass", "timeout": 1})
	if r.Out.Error == nil || r.Out.Error.Kind != "timeout" {
		t.Fatalf("want timeout, got %s", r.Text)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// Close waited for codebridge to exit: everything it started has ended,
	// and Podman removes the containers.
	if left := containersLeft(t, pid); len(left) != 0 {
		t.Fatalf("containers left after codebridge exited: %v", left)
	}
}

// TestPodmanMissing: with no Podman at all (no Docker daemon, in the Docker
// phase), codebridge still starts, lists its tool, and run_python explains
// what to install or start.
func TestPodmanMissing(t *testing.T) {
	env := bridgeEnv(t, t.TempDir(), "CONTAINER_HOST=unix://"+filepath.Join(t.TempDir(), "nothing.sock"),
		"DOCKER_HOST=unix://"+filepath.Join(t.TempDir(), "nothing.sock"))
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + t.TempDir() // no podman binary anywhere
		}
	}
	cs, _ := session(t, env)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 1 {
		t.Fatalf("tools/list = %v, %v", tools, err)
	}
	r := runPython(t, cs, map[string]any{"code": "print(1)"})
	if !r.IsError || r.Out.Error == nil || r.Out.Error.Kind != "sandbox_unavailable" {
		t.Fatalf("want sandbox_unavailable, got %+v / %q", r.Out.Error, r.Text)
	}
	if r.Out.ExitCode != -1 {
		t.Errorf("exit_code %d, want -1: the code never ran", r.Out.ExitCode)
	}
	if testenv.Engine() == "docker" {
		if !strings.Contains(r.Text, "Docker not reachable") || !strings.Contains(r.Text, "start Docker") || !strings.Contains(r.Text, "DOCKER_HOST") {
			t.Errorf("message does not say what to do: %q", r.Text)
		}
	} else if !strings.Contains(r.Text, "podman") || !strings.Contains(strings.ToLower(r.Text), "install") && !strings.Contains(r.Text, "CONTAINER_HOST") {
		t.Errorf("message does not say what to do: %q", r.Text)
	}
}

// TestTypeScriptClient drives codebridge with the official TypeScript SDK, a
// client nobody on this project wrote.
func TestTypeScriptClient(t *testing.T) {
	requirePodman(t)
	clients := testenv.NPMClients(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "install Node.js 20+")
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "ts_client.mjs"))
	cmd := exec.Command(node, script, binary(t))
	cmd.Env = append(bridgeEnv(t, t.TempDir()), "CODEBRIDGE_TEST_NPM_CLIENTS="+clients)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("ts client: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Tools  []string `json:"tools"`
		Print  string   `json:"print"`
		Raised bool     `json:"raised"`
		Trace  string   `json:"trace"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("ts client output %q: %v", out, err)
	}
	sort.Strings(got.Tools)
	if !slices.Equal(got.Tools, []string{"run_python"}) {
		t.Errorf("tools = %v, want [run_python]", got.Tools)
	}
	if got.Print != "3\n" {
		t.Errorf("print(1+2) stdout = %q", got.Print)
	}
	if !got.Raised || !strings.Contains(got.Trace, "ValueError: boom") {
		t.Errorf("exception: isError=%v text=%q", got.Raised, got.Trace)
	}
}
