package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// runCLI runs the built binary with args, env and stdin, returning its output
// and exit status.
func runCLI(t testing.TB, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
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
	good, failing := t.TempDir(), t.TempDir()
	writeServers(t, good, "s.json", map[string]any{"alpha": map[string]any{"url": "http://127.0.0.1:1/mcp", "disabled": true}})
	writeServers(t, failing, "s.json", map[string]any{"beta": map[string]any{"command": "/bin/false"}})
	env := bridgeEnv(t, dir)
	// What a person has: no MCP_BRIDGE_LOG_LEVEL, so the default level.
	quiet := func(dir string, extra ...string) []string {
		e := slices.DeleteFunc(bridgeEnv(t, dir), func(kv string) bool { return strings.HasPrefix(kv, "MCP_BRIDGE_LOG_LEVEL=") })
		return append(e, extra...)
	}
	// No Podman anywhere: the socket named does not exist, nor does a podman
	// binary; in the Docker phase, DOCKER_HOST names no daemon either.
	noPodman := quiet(t.TempDir(), "CONTAINER_HOST=unix://"+filepath.Join(t.TempDir(), "none.sock"),
		"DOCKER_HOST=unix://"+filepath.Join(t.TempDir(), "none.sock"))
	for i, kv := range noPodman {
		if strings.HasPrefix(kv, "PATH=") {
			noPodman[i] = "PATH=" + t.TempDir()
		}
	}
	missing := filepath.Join(dir, "nope.py")
	tests := []struct {
		name       string
		env        []string
		stdin      string
		args       []string
		wantCode   int
		wantOut    []string
		wantStderr []string
		noStderr   bool // stderr must be empty: no log lines
	}{
		{name: "version", args: []string{"version"}, wantOut: []string{"codebridge "}},
		{name: "help", args: []string{"help"}, wantOut: []string{"one MCP tool, run_python", "claude mcp add codebridge", "go install github.com/codebridge-mcp/codebridge/cmd/codebridge@"}},
		{name: "-h", args: []string{"-h"}, wantOut: []string{"one MCP tool, run_python", "exec --help"}},
		{name: "--version", args: []string{"--version"}, wantOut: []string{"codebridge "}},

		// Every command takes --help and --version, whatever the environment holds.
		{name: "exec -h", env: append(env[:len(env):len(env)], "MCP_BRIDGE_PIDS=lots"), args: []string{"exec", "-h"},
			wantOut: []string{"Usage: codebridge exec", "FILE", "codebridge exec [--timeout T] -", "--timeout T", "whole seconds (30) or a Go duration",
				"exactly as the run_python tool", "Exit status", "sys.exit(N)"}},
		{name: "exec --help", args: []string{"exec", "--help"}, wantOut: []string{"Usage: codebridge exec"}},
		{name: "help exec", args: []string{"help", "exec"}, wantOut: []string{"Usage: codebridge exec"}},
		{name: "servers --help", args: []string{"servers", "--help"}, wantOut: []string{"Usage: codebridge servers", "--tools", "Exit status"}},
		{name: "version --help", args: []string{"version", "--help"}, wantOut: []string{"Usage: codebridge version"}},
		{name: "setup --help", args: []string{"setup", "--help"}, wantOut: []string{"Usage: codebridge setup", "--yes", "--from HOW", "registry", "Debian", "Exit status"}},
		{name: "help setup", args: []string{"help", "setup"}, wantOut: []string{"Usage: codebridge setup"}},
		{name: "doctor --help", args: []string{"doctor", "--help"}, wantOut: []string{"Usage: codebridge doctor", "podman", "sandbox", "server NAME", "Exit status"}},
		{name: "help doctor", args: []string{"help", "doctor"}, wantOut: []string{"Usage: codebridge doctor"}},
		{name: "import --help", args: []string{"import", "--help"}, wantOut: []string{"Usage: codebridge import", "--write", "Claude Desktop", "Codex", "Exit status"}},
		{name: "setup --from ftp", args: []string{"setup", "--from", "ftp"}, wantCode: 1, wantStderr: []string{`--from "ftp": want auto, registry or debian`}},
		{name: "setup without Podman nor apt-get", env: append(noPodman[:len(noPodman):len(noPodman)], "MCP_BRIDGE_ENGINE=podman"), args: []string{"setup"}, wantCode: 1,
			wantStderr: []string{"missing: podman", "codebridge setup knows apt-get only"}},
		{name: "exec --version", args: []string{"exec", "--version"}, wantOut: []string{"codebridge "}},
		{name: "servers --version", args: []string{"servers", "--version"}, wantOut: []string{"codebridge "}},

		{name: "unknown command", args: []string{"frob"}, wantCode: 2, wantStderr: []string{`unknown command "frob"`, "codebridge --help"}},
		{name: "unknown flag", args: []string{"servers", "--frob"}, wantCode: 2,
			wantStderr: []string{"codebridge servers: flag provided but not defined: -frob", "see 'codebridge servers --help'"}},
		{name: "extra argument", args: []string{"servers", "x"}, wantCode: 2, wantStderr: []string{`unexpected argument "x"`}},
		{name: "invalid setting", env: append(env[:len(env):len(env)], "MCP_BRIDGE_PIDS=lots"), args: []string{"servers"},
			wantCode: 2, wantStderr: []string{`invalid MCP_BRIDGE_PIDS="lots"`}},
		{name: "serve --http without a port", args: []string{"serve", "--http", "8080"}, wantCode: 2,
			wantStderr: []string{`codebridge serve: --http "8080": want HOST:PORT such as 127.0.0.1:8080`}},
		{name: "invalid MCP_BRIDGE_HTTP", env: append(env[:len(env):len(env)], "MCP_BRIDGE_HTTP=8080"), args: []string{"serve"},
			wantCode: 2, wantStderr: []string{`invalid MCP_BRIDGE_HTTP="8080": want HOST:PORT`}},
		{name: "serve --http without a token on the network", env: append(env[:len(env):len(env)], "MCP_BRIDGE_HTTP_AUTH=none"), args: []string{"serve", "--http", ":0"},
			wantCode: 1, wantStderr: []string{"MCP_BRIDGE_HTTP_AUTH=none is allowed only on a loopback address"}},
		{name: "serve --http with a weak token", env: append(env[:len(env):len(env)], "MCP_BRIDGE_HTTP_TOKEN=secret"), args: []string{"serve", "--http", "127.0.0.1:0"},
			wantCode: 1, wantStderr: []string{"MCP_BRIDGE_HTTP_TOKEN is too weak", "openssl rand -hex 32"}},
		{name: "invalid log level", env: append(env[:len(env):len(env)], "MCP_BRIDGE_LOG_LEVEL=loud"), args: []string{"servers"},
			wantCode: 2, wantStderr: []string{`invalid MCP_BRIDGE_LOG_LEVEL="loud": want debug, info, warn or error`}},

		{name: "servers", env: quiet(good), args: []string{"servers"}, wantOut: []string{"SERVER", "alpha", "streamable-http", "disabled"}, noStderr: true},
		{name: "servers --config-dir after the command", env: quiet(t.TempDir()), args: []string{"servers", "--config-dir", good},
			wantOut: []string{"alpha"}, noStderr: true},
		{name: "servers with a config problem", args: []string{"servers"}, wantCode: 1,
			wantOut:    []string{"SERVER", "alpha", "streamable-http", "disabled", "beta", "stdio", "configured", "broken.json:1:", "invalid JSON"},
			wantStderr: []string{"codebridge servers: ", "1 problem in the files of " + dir}},
		{name: "servers with a failing server", env: quiet(failing), args: []string{"servers", "--tools"}, wantCode: 1,
			wantOut: []string{"beta failed:"}, wantStderr: []string{"1 server failed to start"}},

		{name: "exec needs a file", args: []string{"exec"}, wantCode: 2, wantStderr: []string{"want one FILE"}},
		{name: "exec missing file", args: []string{"exec", missing}, wantCode: 2, wantStderr: []string{"no such file"}},
		// --timeout takes whole seconds, as its help says, and Go durations.
		{name: "exec --timeout in seconds", args: []string{"exec", "--timeout", "2", missing}, wantCode: 2, wantStderr: []string{"no such file"}},
		{name: "exec --timeout as a duration", args: []string{"exec", "--timeout", "1m30s", missing}, wantCode: 2, wantStderr: []string{"no such file"}},
		{name: "exec --timeout zero", args: []string{"exec", "--timeout", "0", missing}, wantCode: 2,
			wantStderr: []string{`codebridge exec: invalid value "0" for flag -timeout: want a positive duration`}},
		{name: "exec --timeout negative", args: []string{"exec", "--timeout", "-5s", missing}, wantCode: 2, wantStderr: []string{"want a positive duration"}},
		{name: "exec --timeout fraction", args: []string{"exec", "--timeout", "2.5", missing}, wantCode: 2,
			wantStderr: []string{"want whole seconds such as 30, or a duration such as 45s"}},
		{name: "exec --timeout beyond a duration", args: []string{"exec", "--timeout", "99999999999", missing}, wantCode: 2,
			wantStderr: []string{"want at most 9223372036 seconds"}},
		{name: "exec --timeout over the maximum", args: []string{"exec", "--timeout", "121", missing}, wantCode: 2,
			wantStderr: []string{"--timeout 2m1s is over the 2m0s maximum (MCP_BRIDGE_MAX_TIMEOUT)", "raise MCP_BRIDGE_MAX_TIMEOUT"}},
		{name: "exec --timeout within a raised maximum", env: append(env[:len(env):len(env)], "MCP_BRIDGE_MAX_TIMEOUT=10m"),
			args: []string{"exec", "--timeout", "300", missing}, wantCode: 2, wantStderr: []string{"no such file"}},
		// The sandbox cannot run: a failure (1) with what to do, and no log lines.
		{name: "exec without the engine", env: noPodman, stdin: "print(1)\n", args: []string{"exec", "-"}, wantCode: 1,
			wantStderr: []string{"codebridge exec: ", map[string]string{"podman": "podman", "docker": "Docker not reachable"}[testenv.Engine()]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.env
			if e == nil {
				e = env
			}
			out, stderr, code := runCLI(t, e, tt.stdin, tt.args...)
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
			if tt.noStderr && stderr != "" {
				t.Errorf("stderr at the default log level, want none:\n%s", stderr)
			}
			if strings.Contains(stderr, "level=INFO") && !slices.Contains(e, "MCP_BRIDGE_LOG_LEVEL=debug") {
				t.Errorf("info log lines at the default log level:\n%s", stderr)
			}
		})
	}
}

func TestExecCommand(t *testing.T) {
	requirePodman(t)
	// No MCP_BRIDGE_LOG_LEVEL, as for a person: stderr is the code's alone.
	env := slices.DeleteFunc(bridgeEnv(t, t.TempDir()), func(kv string) bool { return strings.HasPrefix(kv, "MCP_BRIDGE_LOG_LEVEL=") })
	out, stderr, code := runCLI(t, env, "import sys\nprint('to out')\nprint('to err', file=sys.stderr)\nsys.exit(4)\n", "exec", "-")
	if out != "to out\n" || !strings.HasPrefix(stderr, "to err\n") || strings.Contains(stderr, "level=") || code != 4 {
		t.Errorf("exec -: stdout %q, stderr %q, exit %d; want 'to out', 'to err' and no log lines, 4", out, stderr, code)
	}
	file := filepath.Join(t.TempDir(), "fail.py")
	os.WriteFile(file, []byte("raise KeyError('k')\n"), 0o644)
	_, stderr, code = runCLI(t, env, "", "exec", file)
	if code != 1 || !strings.Contains(stderr, "KeyError: 'k'") {
		t.Errorf("exec FILE: stderr %q, exit %d; want a KeyError traceback and exit 1", stderr, code)
	}
	// --timeout in whole seconds. Code that will not stop is killed; it has
	// no exit status of its own, and exec's is 1 (not 255 from os.Exit(-1)).
	stuck := "import time\nwhile True:\n    try:\n        time.sleep(100)\n    except KeyboardInterrupt:\n        pass\n"
	_, stderr, code = runCLI(t, env, stuck, "exec", "--timeout", "1", "-")
	if code != 1 || !strings.Contains(stderr, "timed out after 1 second") {
		t.Errorf("exec --timeout 1 on code that ignores the interrupt: stderr %q, exit %d; want a timeout and exit 1", stderr, code)
	}
}

// TestExecTerminal: `exec -` on a terminal says it waits for code until Ctrl-D,
// rather than seeming to hang.
func TestExecTerminal(t *testing.T) {
	script, err := exec.LookPath("script") // util-linux: gives the command a pseudo-terminal
	if err != nil {
		t.Skip("script(1) not installed")
	}
	// The code then fails to run (no Podman at the socket named): only the note matters here.
	cmd := exec.Command(script, "-qec", binary(t)+" exec -", "/dev/null")
	cmd.Env = bridgeEnv(t, t.TempDir(), "CONTAINER_HOST=unix://"+filepath.Join(t.TempDir(), "none.sock"))
	cmd.Stdin = strings.NewReader("print(1)\n\x04") // Ctrl-D ends the input
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "codebridge exec: reading Python code from stdin until Ctrl-D") {
		t.Errorf("output of exec - on a terminal:\n%s", out)
	}
	// Not a terminal: no note.
	_, stderr, _ := runCLI(t, cmd.Env, "print(1)\n", "exec", "-")
	if strings.Contains(stderr, "Ctrl-D") {
		t.Errorf("exec - with a pipe as stdin says %q", stderr)
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
	// Not a terminal, but not a client either: /dev/null is served (and ends at
	// once). Serving logs at info by default, unlike exec and servers.
	cmd = exec.Command(binary(t))
	cmd.Env = slices.DeleteFunc(bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_WARM_CONTAINERS=0"),
		func(kv string) bool { return strings.HasPrefix(kv, "MCP_BRIDGE_LOG_LEVEL=") })
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	cmd.Stdin = devnull
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "stdin is a terminal") ||
		!strings.Contains(string(out), `level=INFO msg="serving MCP on stdio"`) {
		t.Errorf("with stdin /dev/null: %v; want info logs and no terminal note:\n%s", err, out)
	}
}

// TestMemoryCLI: a person sees and removes what agents stored.
func TestMemoryCLI(t *testing.T) {
	state := t.TempDir()
	st := memory.New(state)
	if err := st.Save("plan", json.RawMessage(`{"steps":[1,2]}`), json.RawMessage(`{"by":"agent"}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.Save("-h", json.RawMessage(`"dash"`), nil); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveTool(memory.Tool{Name: "clean", Signature: "clean(rows)", Source: "def clean(rows):\n    return rows\n", Description: "Drops empty rows.\nMore."}); err != nil {
		t.Fatal(err)
	}
	env := append(bridgeEnv(t, t.TempDir()), "MCP_BRIDGE_STATE_DIR="+state)
	for _, tt := range []struct {
		args     []string
		code     int
		out, err string // substrings
	}{
		{args: []string{"memory", "list"}, out: "plan  15     "},
		{args: []string{"memory"}, out: `{"by":"agent"}`},
		{args: []string{"memory", "show", "plan"}, out: "{\n  \"steps\": [\n    1,\n    2\n  ]\n}\n", err: `metadata: {"by":"agent"}`},
		{args: []string{"memory", "show", "--", "-h"}, out: `"dash"`, err: "6 bytes, created "},
		{args: []string{"memory", "tools"}, out: "clean(rows)"},
		{args: []string{"memory", "tools"}, out: "Drops empty rows.\n"},
		{args: []string{"memory", "show-tool", "clean"}, out: "def clean(rows):"},
		{args: []string{"memory", "show", "nope"}, code: 1, err: "no memory \"nope\""},
		{args: []string{"memory", "frobnicate"}, code: 2, err: "unknown verb"},
		{args: []string{"memory", "show"}, code: 2, err: "want 1 argument(s)"},
		{args: []string{"memory", "show", "a", "b"}, code: 2, err: "want 1 argument(s), got 2"},
		{args: []string{"memory", "show", "tab\there"}, code: 1, err: "non-printable"},
		{args: []string{"memory", "--help"}, out: "Shows and removes what agents stored"},
		{args: []string{"memory", "delete", "--help"}, out: "codebridge memory delete KEY"},
		{args: []string{"help", "memory"}, out: "codebridge memory delete-tool NAME"},
		{args: []string{"memory", "delete", "plan"}, out: "deleted memory plan"},
		{args: []string{"memory", "delete", "plan"}, code: 1, err: "no memory \"plan\""},
		{args: []string{"memory", "delete", "--", "-h"}, out: "deleted memory -h"},
		{args: []string{"memory", "delete-tool", "clean"}, out: "deleted saved helper clean"},
		{args: []string{"memory", "delete-tool", "clean"}, code: 1, err: "no saved helper \"clean\""},
		{args: []string{"memory", "list"}, out: "no memories in " + state},
		{args: []string{"memory", "tools"}, out: "no saved helpers"},
	} {
		out, errOut, code := runCLI(t, env, "", tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errOut, tt.err) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d with %q and %q", tt.args, code, out, errOut, tt.code, tt.out, tt.err)
		}
	}
}

// TestAuditCLI: a person reads the recorded tool calls, filtered.
func TestAuditCLI(t *testing.T) {
	state := t.TempDir()
	l := audit.New(audit.Dir(state), audit.Options{})
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i, r := range []audit.Record{
		{Session: "s3", Run: 1, Server: "hosted", Kind: audit.KindSignIn, Confirm: "decline", Outcome: "auth_required", Error: "MCP server \"hosted\" needs you to sign in"},
		{Session: "s1", Run: 1, Server: "everything", Kind: audit.KindResource, Tool: "demo://doc", Outcome: "ok", ResultBytes: 90},
		{Session: "s1", Run: 1, Server: "everything", Tool: "echo", Outcome: "ok", ArgBytes: 17, ResultBytes: 80, DurationMS: 1.25},
		{Session: "s1", Run: 2, Server: "everything", Tool: "toggle-simulated-logging", Outcome: "policy_denied", Error: "blocked by policy: read-only"},
		{Session: "s2", Run: 1, Server: "memory", Tool: "read_graph", Outcome: "ok", ResultBytes: 40},
		{Session: "s2", Run: 1, Server: "memory", Tool: "nope", Outcome: "unknown_tool", Error: "unknown tool"},
	} {
		r.Time = base.Add(time.Duration(i) * time.Second)
		if err := l.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	env := append(bridgeEnv(t, t.TempDir()), "MCP_BRIDGE_STATE_DIR="+state)
	for _, tt := range []struct {
		args         []string
		code         int
		out, err     string   // substrings
		tools, notIn []string // tools shown, tools not shown
	}{
		{args: []string{"audit"}, out: "SESSION", tools: []string{"echo", "toggle-simulated-logging", "read_graph", "nope"}},
		{args: []string{"audit"}, out: "1.2  ", tools: []string{"echo"}},
		{args: []string{"audit", "--session", "s1"}, out: "resource demo://doc", tools: []string{"echo"}},
		{args: []string{"audit", "--server", "hosted"}, out: "sign-in (decline)", notIn: []string{"echo"}},
		{args: []string{"audit", "-n", "1"}, tools: []string{"nope"}, notIn: []string{"echo", "read_graph"}},
		{args: []string{"audit", "--server", "memory"}, tools: []string{"read_graph", "nope"}, notIn: []string{"echo"}},
		{args: []string{"audit", "--session", "s1", "--errors"}, out: "blocked by policy: read-only", tools: []string{"toggle-simulated-logging"}, notIn: []string{"echo", "nope"}},
		{args: []string{"audit", "--outcome", "unknown_tool"}, tools: []string{"nope"}, notIn: []string{"echo"}},
		{args: []string{"audit", "--tool", "echo", "--json"}, out: `"argument_bytes":17`, tools: []string{"echo"}, notIn: []string{"SESSION"}},
		{args: []string{"audit", "--server", "none"}, out: "no tool calls recorded in " + audit.Dir(state)},
		{args: []string{"audit", "-n", "-1"}, code: 2, err: "want 0 (all) or more"},
		{args: []string{"audit", "--bogus"}, code: 2, err: "flag provided but not defined"},
		{args: []string{"audit", "--help"}, out: "Usage: codebridge audit"},
		{args: []string{"help", "audit"}, out: "--session ID"},
	} {
		out, errOut, code := runCLI(t, env, "", tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errOut, tt.err) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d with %q and %q", tt.args, code, out, errOut, tt.code, tt.out, tt.err)
		}
		for _, tool := range tt.tools {
			if !strings.Contains(out, tool) {
				t.Errorf("%v does not show %s:\n%s", tt.args, tool, out)
			}
		}
		for _, tool := range tt.notIn {
			if strings.Contains(out, tool) {
				t.Errorf("%v shows %s:\n%s", tt.args, tool, out)
			}
		}
	}
	// --json prints records as stored, one a line.
	out, _, _ := runCLI(t, env, "", "audit", "--json", "-n", "0")
	var n int
	for line := range strings.Lines(out) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Time.IsZero() {
			t.Errorf("--json line %q: %v", line, err)
		}
		n++
	}
	if n != 6 {
		t.Errorf("--json -n 0 printed %d records, want 6", n)
	}
}
