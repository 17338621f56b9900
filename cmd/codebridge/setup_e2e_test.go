package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/configs"
	"github.com/codebridge-mcp/codebridge/runtime/setup"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// privatePodman is the environment of a Podman as a fresh machine has it:
// its own image store, empty, and a containers.conf with none of the
// defaults this host needs (CONTAINERS_CONF makes Podman read that file
// only), so a probe container fails as it does on CI's fresh machines. It
// returns the podman binary, the environment and the containers.conf path.
// The store is a rootful one, so the test must run as root.
func privatePodman(t *testing.T) (podman string, env []string, conf string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root", "run the test as root: its private Podman store is a rootful one")
	}
	podman = testenv.RequirePodmanBinary(t)
	dir := t.TempDir()
	storage := filepath.Join(dir, "storage.conf")
	conf = filepath.Join(dir, "containers.conf")
	err := os.WriteFile(storage, []byte("[storage]\ndriver = \"overlay\"\ngraphroot = \""+dir+"/graph\"\nrunroot = \""+dir+"/run\"\n"), 0o644)
	if err == nil {
		err = os.WriteFile(conf, nil, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Podman's, whichever engine the other tests run against.
	env = append(os.Environ(), "CONTAINERS_STORAGE_CONF="+storage, "CONTAINERS_CONF="+conf, "MCP_BRIDGE_ENGINE=podman")
	t.Cleanup(func() {
		cmd := exec.Command("podman", "rmi", "--all", "--force")
		cmd.Env = env
		cmd.Run()
	})
	return podman, env, conf
}

// TestSetup drives codebridge setup on a machine state where the image is
// missing and a probe container fails: it pulls the image (here from a
// registry on loopback), sees the probe fail, writes the fix only with
// consent, and ends with a container that runs.
func TestSetup(t *testing.T) {
	testenv.OnlyOn(t, "podman")
	podman, env, conf := privatePodman(t)
	ref := testenv.Registry(t, testenv.MinimalImage(), nil)
	probe := exec.Command(podman, "run", "--rm", "--network", "none", testenv.MinimalImage(), "true")
	probe.Env = env
	if probe.Run() == nil {
		testenv.Missing(t, "a host where Podman's built-in defaults fail a probe container (as on CI's machines)",
			"nothing to fix here; the test needs such a host")
	}

	// No terminal to ask on and no --yes: the image is pulled (no system
	// file is written for that), then the fix is shown, not written.
	_, stderr, code := runCLI(t, env, "", "setup", "--image", ref)
	if code != 1 || !strings.Contains(stderr, "podman could not start a probe container") ||
		!strings.Contains(stderr, `runtime = "runc"`) || !strings.Contains(stderr, "--yes") {
		t.Fatalf("setup without consent: exit %d; want 1, the probe's failure and the fix to write\n%s", code, stderr)
	}
	if data, _ := os.ReadFile(conf); len(data) != 0 {
		t.Fatalf("setup without consent wrote %s:\n%s", conf, data)
	}
	exists := exec.Command(podman, "image", "exists", ref)
	exists.Env = env
	if exists.Run() != nil {
		t.Fatalf("setup did not pull %s\n%s", ref, stderr)
	}

	_, stderr, code = runCLI(t, env, "", "setup", "--yes", "--image", ref)
	if code != 0 || !strings.Contains(stderr, "wrote "+conf) || !strings.Contains(stderr, "ready: Podman runs the sandbox image") {
		t.Fatalf("setup --yes: exit %d; want 0 after writing %s\n%s", code, conf, stderr)
	}
	if data, _ := os.ReadFile(conf); !strings.Contains(string(data), `runtime = "runc"`) {
		t.Errorf("%s after setup --yes:\n%s", conf, data)
	}
	probe = exec.Command(podman, "run", "--rm", "--network", "none", ref, "python3", "-c", "print('ok')")
	probe.Env = env
	if out, err := probe.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("a container after setup: %v: %s", err, out)
	}

	// Again: nothing left to do, and the file is not written twice.
	_, stderr, code = runCLI(t, env, "", "setup", "--image", ref)
	if code != 0 || strings.Contains(stderr, "wrote") || !strings.Contains(stderr, "is present") {
		t.Errorf("setup a second time: exit %d; want 0 with nothing done\n%s", code, stderr)
	}
}

// TestSetupRegistryRoute builds codebridge's minimal image the way a machine
// that reaches a container registry does: podman build on the embedded
// Containerfile, from a base image pulled from a registry (here one on
// loopback, holding a Debian bookworm image with apt, given by --base), with
// the probe's fix written on the way. apt inside the build needs the Debian
// mirror, as the Debian route does.
func TestSetupRegistryRoute(t *testing.T) {
	testenv.OnlyOn(t, "podman")
	podman, env, _ := privatePodman(t)
	base := testenv.Registry(t, testenv.MinimalImage(), nil)
	image := setup.MinimalImage

	_, stderr, code := runCLI(t, env, "", "setup", "--yes", "--from", "registry", "--base", base, "--image", image)
	if code != 0 || !strings.Contains(stderr, "pulling the base image "+base) ||
		!strings.Contains(stderr, "from the embedded Containerfile") || !strings.Contains(stderr, "ready: Podman runs the sandbox image") {
		t.Fatalf("setup --from registry: exit %d\n%s", code, stderr)
	}
	inspect := exec.Command(podman, "image", "inspect", "--format", `{{index .Config.Labels "io.codebridge.sandbox.variant"}} {{.Config.User}} {{index .Config.Labels "`+configs.InputsLabel+`"}}`, image)
	inspect.Env = env
	if out, err := inspect.Output(); err != nil || strings.TrimSpace(string(out)) != "minimal 65534:65534 "+configs.Inputs("minimal") {
		t.Errorf("the built image: %q, %v; want the minimal variant, running as nobody, labelled with its inputs %s", out, err, configs.Inputs("minimal"))
	}
	// Built from today's files, it is present; labelled with other inputs
	// (files changed since), it is built again.
	if _, stderr, code := runCLI(t, env, "", "setup", "--from", "registry", "--base", base, "--image", image); code != 0 || !strings.Contains(stderr, "is present") {
		t.Errorf("setup again: exit %d; want 0 and the image present\n%s", code, stderr)
	}
	run := exec.Command(podman, "run", "--rm", "--network", "none", image, "python3", "-c", "import os; print(os.getuid())")
	run.Env = env
	if out, err := run.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "65534" {
		t.Errorf("a container of the built image: %v: %s", err, out)
	}

	// --base belongs to the registry route.
	if _, stderr, code := runCLI(t, env, "", "setup", "--from", "debian", "--base", base); code != 1 || !strings.Contains(stderr, "--base") {
		t.Errorf("setup --from debian --base: exit %d; want 1 and a word on --base\n%s", code, stderr)
	}
}

// TestFirstRunPullsImage: the first run_python on a machine without the
// sandbox image reports the pull as progress notifications to the MCP client,
// a run whose time limit passes first is told why and what to do, and the run
// that waited says so in its result.
func TestFirstRunPullsImage(t *testing.T) {
	requirePodman(t)
	gate := make(chan struct{})
	ref := testenv.Registry(t, testenv.MinimalImage(), gate) // served from Podman's store
	t.Cleanup(func() { exec.Command(testenv.EngineCLI(t), "rmi", "--force", ref).Run() })

	var (
		mu       sync.Mutex
		messages []string
		first    = make(chan struct{})
	)
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if req.Params.ProgressToken == "pull" && len(messages) == 0 {
			close(first)
		}
		if req.Params.ProgressToken == "pull" {
			messages = append(messages, req.Params.Message)
		}
	}}
	cs, _, _ := sessionProcWith(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_IMAGE="+ref), opts)

	// The registry holds the pull: a run with a 1 s limit does not start.
	r := runPython(t, cs, map[string]any{"code": "print(1)", "timeout": 1})
	if !r.IsError || r.Out.ExitCode == 0 || !strings.Contains(r.Text, "preparing the sandbox image") || !strings.Contains(r.Text, "run the code again") {
		t.Fatalf("run during the pull: error %v, exit %d; want an error that explains the wait\n%s", r.IsError, r.Out.ExitCode, r.Text)
	}

	done := make(chan runResult, 1)
	go func() {
		done <- callRunPython(t, cs, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(6*7)"},
			Meta: mcp.Meta{"progressToken": "pull"}})
	}()
	<-first // the client hears about the pull while the run waits
	close(gate)
	r = <-done
	if r.IsError || r.Out.Stdout != "42\n" || !strings.Contains(r.Text, "waited") {
		t.Fatalf("run once the pull goes on: error %v; want 42 and a note about the wait\n%s", r.IsError, r.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"is not here: pulling it", "Copying", "pulled " + ref}
	if testenv.Engine() == "docker" {
		want[1] = "Pulling from"
	}
	for _, w := range want {
		found := false
		for _, m := range messages {
			found = found || strings.Contains(m, w)
		}
		if !found {
			t.Errorf("no progress message with %q; got %q", w, messages)
		}
	}
	for _, m := range messages {
		if !strings.HasPrefix(m, "sandbox image: ") {
			t.Errorf("progress message %q does not say it is about the sandbox image", m)
		}
	}
}

// TestSetupAsksBeforeInstalling: with Podman missing, setup installs it with
// apt-get only with consent; without, it prints the commands and fails.
func TestSetupAsksBeforeInstalling(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	// apt-get records its arguments and fails, as it would offline.
	stub := "#!/bin/sh\necho \"$@\" >>" + calls + "\necho 'E: no network here' >&2\nexit 100\n"
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	// Not as root, setup runs apt-get through sudo.
	if err := os.WriteFile(filepath.Join(bin, "sudo"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ engine, missing, install string }{
		{"podman", "missing: podman, runc, catatonit", "apt-get install -y -qq podman runc catatonit"},
		{"docker", "missing: docker.io", "apt-get install -y -qq docker.io"},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			os.Remove(calls)
			// Nothing names a Docker daemon elsewhere, and there is none here.
			env := append(bridgeEnv(t, t.TempDir()), "PATH="+bin, "MCP_BRIDGE_ENGINE="+tt.engine,
				"DOCKER_HOST=", "DOCKER_CONTEXT=", "DOCKER_CONFIG="+t.TempDir(), "XDG_RUNTIME_DIR="+t.TempDir())

			_, stderr, code := runCLI(t, env, "", "setup")
			if code != 1 || !strings.Contains(stderr, tt.missing) ||
				!strings.Contains(stderr, tt.install) || !strings.Contains(stderr, "not done without your consent") {
				t.Errorf("setup without consent: exit %d; want 1 with the install command shown\n%s", code, stderr)
			}
			if data, err := os.ReadFile(calls); err == nil {
				t.Errorf("apt-get ran without consent: %s", data)
			}

			_, stderr, code = runCLI(t, env, "", "setup", "--yes")
			data, _ := os.ReadFile(calls)
			if code != 1 || !strings.Contains(stderr, "E: no network here") || !strings.Contains(string(data), "update -qq") {
				t.Errorf("setup --yes with a failing apt-get: exit %d, apt-get called with %q; want 1 and apt-get's own error\n%s", code, data, stderr)
			}
		})
	}
}
