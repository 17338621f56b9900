package main

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// secretService starts a real Secret Service, gnome-keyring, in a private
// D-Bus session of its own, and returns the environment that reaches it
// (DBUS_SESSION_BUS_ADDRESS and fresh XDG_RUNTIME_DIR and XDG_DATA_HOME).
// When t ends the daemon is killed and the session ends; the test fails if
// the daemon or the bus is still there.
func secretService(t *testing.T) []string {
	t.Helper()
	for _, bin := range []string{"dbus-run-session", "dbus-send", "gnome-keyring-daemon", "secret-tool"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, bin, "apt-get install -y --no-install-recommends gnome-keyring dbus dbus-daemon libsecret-tools (scripts/test.sh does; never dbus-x11)")
		}
	}
	runtimeDir, dataDir := t.TempDir(), t.TempDir()
	if err := os.Chmod(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The script owns the daemon: it prints the daemon's PID and the bus
	// address once the daemon owns org.freedesktop.secrets, then waits for
	// its stdin to close, and kills the daemon on the way out.
	const script = `
printf codebridge-test | gnome-keyring-daemon --foreground --unlock --components=secrets >/dev/null 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon' EXIT
until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true'; do
  kill -0 $daemon 2>/dev/null || { echo "gnome-keyring-daemon exited" >&2; exit 1; }
  sleep 0.02
done
bus=$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.GetConnectionUnixProcessID string:org.freedesktop.DBus | awk '/uint32/ {print $2}')
echo "$daemon $bus $DBUS_SESSION_BUS_ADDRESS"
cat >/dev/null
`
	busEnv := []string{"XDG_RUNTIME_DIR=" + runtimeDir, "XDG_DATA_HOME=" + dataDir}
	cmd := exec.Command("dbus-run-session", "--", "sh", "-c", script)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") }), busEnv...)
	stdin, inErr := cmd.StdinPipe()
	stdout, outErr := cmd.StdoutPipe()
	if err := errors.Join(inErr, outErr); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type ready struct {
		line string
		err  error
	}
	readyc := make(chan ready, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		readyc <- ready{line, err}
	}()
	var pids []int // gnome-keyring-daemon's and the bus's
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the D-Bus session ended with %v\n%s", err, stderr.String())
		}
		// Both end with the session (the bus may take a moment to be
		// reaped once dbus-run-session has gone).
		testenv.Eventually(t, "gnome-keyring-daemon and the bus gone", func() bool {
			return !slices.ContainsFunc(pids, func(pid int) bool { return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
		})
	})
	select {
	case r := <-readyc:
		f := strings.Fields(r.line)
		if r.err != nil || len(f) != 3 || !strings.HasPrefix(f[2], "unix:") {
			t.Fatalf("the Secret Service did not start: %q, %v\n%s", r.line, r.err, stderr.String())
		}
		for _, p := range f[:2] {
			pid, err := strconv.Atoi(p)
			if err != nil || pid <= 1 {
				t.Fatalf("the Secret Service did not start: bad pid in %q\n%s", r.line, stderr.String())
			}
			pids = append(pids, pid)
		}
		return append(busEnv, "DBUS_SESSION_BUS_ADDRESS="+f[2])
	case <-time.After(30 * time.Second):
		t.Fatalf("the Secret Service was not on the bus within 30 s\n%s", stderr.String())
	}
	return nil
}

// TestSecretsEndToEnd: with a real Secret Service, a token stored with
// codebridge secret set reaches a real server through ${keyring:...}, and
// another through ${cmd:...}; the code sees them masked, and neither planted
// value is anywhere in codebridge's log, its state (audit log, manifests),
// the commands' and the run's output, or the sandbox container.
func TestSecretsEndToEnd(t *testing.T) {
	requirePodman(t)
	everything := testenv.NPMBin(t, "mcp-server-everything")
	busEnv := secretService(t)
	const (
		keyringValue = "kr-planted-7c1f0e9a2b61"
		cmdValue     = "cmd-planted-4d8b6a0f3e95"
	)
	planted := []string{keyringValue, cmdValue}

	bin := t.TempDir()
	writeScript := func(name, body string) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	password := writeScript("password.sh", "echo "+cmdValue+"\necho a second line")
	// A server that prints its token on stderr, which codebridge logs.
	chatty := writeScript("chatty.sh", `echo "my token is $API_TOKEN" >&2`+"\nexec "+everything)
	dir := t.TempDir()
	writeServers(t, dir, "s.json", map[string]any{
		"kr": map[string]any{"command": chatty, "env": map[string]string{"API_TOKEN": "${keyring:codebridge-e2e/token}"}},
		"cm": map[string]any{"command": everything, "env": map[string]string{"API_TOKEN": "${cmd:" + password + " --quiet}"}},
	})
	env := bridgeEnv(t, dir, append(busEnv, "MCP_BRIDGE_AUDIT_CONTENTS=1")...)
	var state string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "MCP_BRIDGE_STATE_DIR="); ok {
			state = v
		}
	}
	var output strings.Builder // everything codebridge printed
	cli := func(stdin string, wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, env, stdin, args...)
		output.WriteString(out + errOut)
		if code != wantCode {
			t.Fatalf("codebridge %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, out, errOut)
		}
		return out + errOut
	}

	// Before it is stored the reference cannot resolve, and says what to do.
	if out := cli("", 1, "servers"); !strings.Contains(out, "run 'codebridge secret set codebridge-e2e/token'") {
		t.Errorf("servers with the secret not stored yet:\n%s", out)
	}
	cli(keyringValue+"\n", 0, "secret", "set", "codebridge-e2e/token")
	lookup := exec.Command("secret-tool", "lookup", "service", "codebridge-e2e", "username", "token")
	lookup.Env = env
	if got, err := lookup.Output(); err != nil || string(got) != keyringValue {
		t.Fatalf("secret-tool lookup after codebridge secret set: %v (%d bytes); want the value, newline trimmed", err, len(got))
	}
	cli("", 0, "secret", "check", "codebridge-e2e/token")
	cli("", 0, "servers", "--tools") // starts both, writes manifests
	cli("", 0, "doctor")

	cs, stderr, proc := sessionProcWith(t, env, nil)
	r := runPython(t, cs, map[string]any{"code": `
for s in ("kr", "cm"):
    env = await call_tool(s, "get-env")
    print(s, env["API_TOKEN"])
print(discovered_servers(detailed=True))
print(await query_tool_docs("kr"))
import os
print(sorted(os.environ))
`})
	output.WriteString(r.Text + r.Out.Stdout + r.Out.Stderr)
	if r.IsError || !strings.HasPrefix(r.Out.Stdout, "kr [secret]\ncm [secret]\n") {
		t.Errorf("the code saw %q (error %v); want both tokens masked\n%s", r.Out.Stdout, r.IsError, r.Text)
	}

	// The container: its configuration, its processes' environment, and its
	// files (what the run may have written).
	ids := containersOf(t, proc.Process.Pid)
	if len(ids) == 0 {
		t.Fatalf("no sandbox container of codebridge (pid %d)", proc.Process.Pid)
	}
	for _, id := range ids {
		inspect, err := exec.Command("podman", "inspect", id).Output()
		if err != nil {
			t.Fatalf("podman inspect: %v", err)
		}
		output.Write(inspect)
		envs, _ := exec.Command("podman", "exec", id, "sh", "-c", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'").Output()
		output.Write(envs)
		// -F: a fixed string; grep's own argv is under /proc, which is
		// skipped. Unreadable files make it exit 2 where it finds nothing.
		grep := func(v string) string {
			out, err := exec.Command("podman", "exec", id, "grep", "-rlsF", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev", "-e", v, "/").Output()
			var exit *exec.ExitError
			if err != nil && (!errors.As(err, &exit) || exit.ExitCode() > 2) {
				t.Fatalf("grep in container %s: %v", id, err)
			}
			return string(out)
		}
		if found := grep("root:x:0:0"); !strings.Contains(found, "/etc/passwd") {
			t.Fatalf("grep in container %s does not find what is there: %q", id, found)
		}
		for _, v := range planted {
			if found := grep(v); found != "" {
				t.Errorf("a planted value is in container %s, in %s", id, found)
			}
		}
	}
	cs.Close() // codebridge flushes its log and audit, and stops

	log := stderr.String()
	output.WriteString(log)
	if !strings.Contains(log, "my token is [secret]") {
		t.Errorf("codebridge's debug log lacks the server's stderr line with its token masked")
	}
	files := 0
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		files++
		for _, v := range planted {
			if strings.Contains(string(b), v) {
				t.Errorf("%s holds a planted secret", path)
			}
		}
		return nil
	})
	if m, _ := filepath.Glob(filepath.Join(state, "manifests", "*.json")); len(m) != 2 {
		t.Errorf("manifests: %v; want one per server", m)
	}
	if audit, err := os.ReadFile(filepath.Join(state, "audit", "calls.jsonl")); err != nil || !strings.Contains(string(audit), `\"API_TOKEN\": \"[secret]\"`) {
		t.Errorf("the audit log (%v) lacks the results with the tokens masked:\n%s", err, audit)
	}
	t.Logf("searched %d files of the state directory", files)
	for _, v := range planted {
		if strings.Contains(output.String(), v) {
			t.Errorf("a planted secret is in codebridge's output, log, or the container")
		}
	}
}
