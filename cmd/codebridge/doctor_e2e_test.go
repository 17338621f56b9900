package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestDoctor runs codebridge doctor on a healthy machine, with Podman
// missing, with a broken config file and with a server that cannot start:
// each finding names the problem and its fix, and the exit status says
// whether anything failed.
func TestDoctor(t *testing.T) {
	requirePodman(t)
	memory := testenv.NPMBin(t, "mcp-server-memory")
	// What a person has: the default log level, so only findings print.
	env := func(dir string, extra ...string) []string {
		e := slices.DeleteFunc(bridgeEnv(t, dir), func(kv string) bool { return strings.HasPrefix(kv, "MCP_BRIDGE_LOG_LEVEL=") })
		return append(e, extra...)
	}
	line := func(level, check, rest string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(level) + ` +` + regexp.QuoteMeta(check) + ` +` + rest)
	}

	healthy := t.TempDir()
	writeServers(t, healthy, "servers.json", map[string]any{
		"memory": map[string]any{"command": memory, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "m.json")}},
		"off":    map[string]any{"command": "/bin/false", "disabled": true},
	})
	broken := t.TempDir()
	writeServers(t, broken, "good.json", map[string]any{"memory": map[string]any{"command": memory}})
	if err := os.WriteFile(filepath.Join(broken, "bad.json"), []byte(`{"mcpServers": {"x": {"command": 7}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	failing := t.TempDir()
	writeServers(t, failing, "servers.json", map[string]any{
		"beta": map[string]any{"command": "sh", "args": []string{"-c", "echo 'cannot open the database' >&2; exit 3"}},
	})
	// No podman on PATH and no socket: only what the memory server needs.
	bin := t.TempDir()
	for _, cmd := range []string{"node", "env", "sh"} {
		path, err := exec.LookPath(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(bin, cmd)); err != nil {
			t.Fatal(err)
		}
	}
	noPodman := env(healthy, "PATH="+bin, "XDG_RUNTIME_DIR="+t.TempDir())
	// A state directory others may write to: the sandbox's socket is not used.
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}

	// The runtime the sandbox ran under, and the kernel it saw.
	runtime := line("ok", "runtime", `.*: the sandbox shares this host's Linux kernel \(\S+\)`)
	if confine.GVisor(testenv.Runtime()) {
		runtime = line("ok", "runtime", regexp.QuoteMeta(testenv.Runtime())+`: the sandbox runs on gVisor's kernel, not this host's \(its log begins "Starting gVisor`)
	}
	// The engine the tests run against, and how it looks when missing.
	engineOK := line("ok", "podman", `Podman \d+\.\d+\.\d+ at \S+`)
	missing := []*regexp.Regexp{
		line("FAIL", "podman", `podman is not installed`),
		regexp.MustCompile(`fix: codebridge setup installs Podman`),
		line("FAIL", "sandbox", `not checked: it needs Podman`),
	}
	if testenv.Engine() == "docker" {
		engineOK = line("ok", "docker", `Docker \S+, API 1\.\d+ at unix://\S+ \(the Docker daemon found through DOCKER_HOST\)`)
		noPodman = append(noPodman, "DOCKER_HOST=unix://"+filepath.Join(t.TempDir(), "none.sock"))
		missing = []*regexp.Regexp{
			line("FAIL", "docker", `Docker not reachable at unix://\S+ \(from DOCKER_HOST\)`),
			regexp.MustCompile(`fix: start Docker`),
			line("FAIL", "sandbox", `not checked: it needs Docker`),
		}
	}

	for _, tc := range []struct {
		name     string
		env      []string
		wantCode int
		want     []*regexp.Regexp
		notWant  []string
	}{
		{"healthy", env(healthy), 0, []*regexp.Regexp{
			engineOK,
			line("ok", "image", regexp.QuoteMeta(testenv.Image())),
			line("ok", "sandbox", `a container with codebridge's limits ran Python 3[.\d]+ in \S+, over a unix socket`),
			runtime,
			line("ok", "config", `.*1 file, 2 servers`),
			line("ok", "server memory", `9 tools, listed in \d`),
			line("ok", "server off", `disabled in `),
			line("ok", "state", `.* is writable`),
			regexp.MustCompile(`no problem found`),
		}, []string{"FAIL", "level="}},
		{"engine missing", noPodman, 1, append(missing,
			line("ok", "server memory", `9 tools`), // the servers do not need the engine
		), []string{"no problem found"}},
		// A state folder others may write is refused (another user could
		// plant a fake Podman socket there), with the command that fixes it.
		{"state directory not private", env(healthy, "MCP_BRIDGE_STATE_DIR="+shared), 1, []*regexp.Regexp{
			regexp.MustCompile(`(?m)^FAIL +state +\S+ may be written by its group or others`),
			regexp.MustCompile(`run 'chmod go-w `),
		}, nil},
		{"broken config", env(broken), 1, []*regexp.Regexp{
			line("FAIL", "config file", `.*bad\.json.*command`),
			regexp.MustCompile(`fix: edit bad\.json`),
			line("ok", "server memory", `9 tools`),
		}, nil},
		{"server that cannot start", env(failing), 1, []*regexp.Regexp{
			line("FAIL", "server beta", `did not list its tools .*cannot open the database`),
			regexp.MustCompile(`fix: check its entry in .*servers\.json`),
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tc.env, "", "doctor")
			if code != tc.wantCode {
				t.Errorf("exit %d; want %d", code, tc.wantCode)
			}
			for _, re := range tc.want {
				if !re.MatchString(stdout) {
					t.Errorf("no line matching %s", re)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("output has %q", s)
				}
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
		})
	}
}
