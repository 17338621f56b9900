package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/memory"
)

// runCLI runs the built binary with args, env and stdin, returning its output
// and exit status.
func runCLI(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	writeServers(t, dir, "s.json", map[string]any{
		"beta":  map[string]any{"command": "/bin/false"},
		"alpha": map[string]any{"url": "http://127.0.0.1:1/mcp", "disabled": true},
	})
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"mcpServers": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := bridgeEnv(t, dir)
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantCode   int
		wantOut    []string
		wantStderr []string
	}{
		{name: "version", args: []string{"version"}, wantOut: []string{"codebridge "}},
		{name: "help", args: []string{"help"}, wantOut: []string{"one MCP tool, run_python", "claude mcp add codebridge"}},
		{name: "unknown command", args: []string{"frob"}, wantCode: 2, wantStderr: []string{`unknown command "frob"`}},
		{name: "invalid setting", env: append(env[:len(env):len(env)], "MCP_BRIDGE_PIDS=lots"), args: []string{"servers"},
			wantCode: 2, wantStderr: []string{`invalid MCP_BRIDGE_PIDS="lots"`}},
		{name: "servers", args: []string{"servers"},
			wantOut: []string{"SERVER", "alpha", "streamable-http", "disabled", "beta", "stdio", "configured", "broken.json:1:", "invalid JSON"}},
		{name: "exec needs a file", args: []string{"exec"}, wantCode: 2, wantStderr: []string{"want one FILE"}},
		{name: "exec missing file", args: []string{"exec", filepath.Join(dir, "nope.py")}, wantCode: 2, wantStderr: []string{"no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.env
			if e == nil {
				e = env
			}
			out, stderr, code := runCLI(t, e, "", tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestExecCommand(t *testing.T) {
	requirePodman(t)
	env := bridgeEnv(t, t.TempDir())
	out, stderr, code := runCLI(t, env, "import sys\nprint('to out')\nprint('to err', file=sys.stderr)\nsys.exit(4)\n", "exec", "-")
	if out != "to out\n" || !strings.Contains(stderr, "to err") || code != 4 {
		t.Errorf("exec -: stdout %q, stderr %q, exit %d; want 'to out', 'to err', 4", out, stderr, code)
	}
	file := filepath.Join(t.TempDir(), "fail.py")
	os.WriteFile(file, []byte("raise KeyError('k')\n"), 0o644)
	_, stderr, code = runCLI(t, env, "", "exec", file)
	if code != 1 || !strings.Contains(stderr, "KeyError: 'k'") {
		t.Errorf("exec FILE: stderr %q, exit %d; want a KeyError traceback and exit 1", stderr, code)
	}
}

// TestTerminalExplains: started by a person in a terminal, codebridge says what
// it is and exits instead of waiting silently for MCP messages.
func TestTerminalExplains(t *testing.T) {
	script, err := exec.LookPath("script") // util-linux: gives the command a pseudo-terminal
	if err != nil {
		t.Skip("script(1) not installed")
	}
	cmd := exec.Command(script, "-qec", binary(t), "/dev/null")
	cmd.Env = bridgeEnv(t, t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "stdin is a terminal") || !strings.Contains(string(out), "~/MCPs") {
		t.Errorf("output in a terminal:\n%s", out)
	}
	// Not a terminal, but not a client either: /dev/null is served (and ends at once).
	cmd = exec.Command(binary(t))
	cmd.Env = bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_WARM_CONTAINERS=0")
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	cmd.Stdin = devnull
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "stdin is a terminal") {
		t.Errorf("with stdin /dev/null: %v\n%s", err, out)
	}
}

// TestMemoryCLI: a person sees and removes what agents stored.
func TestMemoryCLI(t *testing.T) {
	state := t.TempDir()
	st := memory.New(state)
	if err := st.Save("plan", json.RawMessage(`{"steps":[1,2]}`), json.RawMessage(`{"by":"agent"}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveTool(memory.Tool{Name: "clean", Source: "def clean(rows):\n    return rows\n", Description: "Drops empty rows.\nMore."}); err != nil {
		t.Fatal(err)
	}
	env := append(bridgeEnv(t, t.TempDir()), "MCP_BRIDGE_STATE_DIR="+state)
	for _, tt := range []struct {
		args     []string
		code     int
		out, err string // substrings
	}{
		{args: []string{"memory", "list"}, out: "plan  15"},
		{args: []string{"memory", "show", "plan"}, out: `{"steps":[1,2]}`, err: `metadata: {"by":"agent"}`},
		{args: []string{"memory", "tools"}, out: "Drops empty rows."},
		{args: []string{"memory", "show-tool", "clean"}, out: "def clean(rows):"},
		{args: []string{"memory", "show", "nope"}, code: 1, err: "no memory \"nope\""},
		{args: []string{"memory", "frobnicate"}, code: 2, err: "unknown verb"},
		{args: []string{"memory", "show"}, code: 2, err: "want 1 argument(s)"},
		{args: []string{"memory", "-h"}, err: "see and remove what agents stored"},
		{args: []string{"memory", "delete", "plan"}, out: "deleted plan"},
		{args: []string{"memory", "delete", "plan"}, code: 1, err: "does not exist"},
		{args: []string{"memory", "delete-tool", "clean"}, out: "deleted clean"},
		{args: []string{"memory", "list"}, out: "no memories in " + state},
		{args: []string{"memory", "tools"}, out: "no saved helpers"},
	} {
		out, errOut, code := runCLI(t, env, "", tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errOut, tt.err) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d with %q and %q", tt.args, code, out, errOut, tt.code, tt.out, tt.err)
		}
	}
}
