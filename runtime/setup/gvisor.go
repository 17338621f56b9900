package setup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// GVisor is the OCI runtime codebridge setup installs and registers:
// gVisor's runsc.
const GVisor = "runsc"

// gvisorHeader starts every file setup writes for gVisor, so that it
// rewrites its own files and leaves others' alone.
const gvisorHeader = "# Written by codebridge setup --runtime runsc: gVisor with the flags codebridge's sandboxes need.\n"

// gvisor installs runsc, registers it under the name runsc with the flags
// of [confine.GVisorArgs] with the engine prepared (and, preparing Podman,
// with a Docker daemon that answers here too), and probes a sandbox
// container under it.
func (s *setup) gvisor(ctx context.Context) error {
	if goruntime.GOOS != "linux" {
		return fmt.Errorf("--runtime runsc: gVisor runs on Linux only; on %s, Podman and Docker run containers in a Linux VM, where gVisor would have to be set up", goruntime.GOOS)
	}
	bin, err := s.runscBinary(ctx)
	if err != nil {
		return err
	}
	if s.Engine == EngineDocker {
		return s.gvisorDocker(ctx, bin)
	}
	wrapper := s.runscWrapperPath()
	if err := s.writeOwn(wrapper, runscWrapper(bin), 0o755, "the wrapper that runs runsc with codebridge's flags"); err != nil {
		return err
	}
	if host := s.Getenv("CONTAINER_HOST"); host != "" {
		s.logf("Podman runs at CONTAINER_HOST=%s, so register gVisor there: on that host, copy %s and put this in %s:\n%s\nthen start its service with 'podman --runtime runsc system service'",
			host, wrapper, filepath.Join(systemDropIns, runscDropIn), podmanRunsc(wrapper))
		return errors.New("--runtime runsc with CONTAINER_HOST set: register gVisor on that host as shown above")
	}
	if conf := s.Getenv("CONTAINERS_CONF"); conf != "" {
		// Podman then reads that file alone, no drop-in.
		s.logf("CONTAINERS_CONF=%s makes Podman read that file alone: add this to it, then run codebridge setup --runtime runsc again:\n%s", conf, podmanRunsc(wrapper))
		if !s.registered(ctx, wrapper) {
			return errors.New("runsc is not registered with Podman: add the lines above to " + conf)
		}
	} else if err := s.writeOwn(s.dropIn(runscDropIn), []byte(gvisorHeader+podmanRunsc(wrapper)), 0o644, "Podman's registration of runsc"); err != nil {
		return err
	}
	if err := s.probeGVisor(ctx, "--runtime", GVisor, "run"); err != nil {
		return err
	}
	if _, ok := s.dockerAnswers(ctx); ok {
		if _, err := s.dockerRunsc(bin); err != nil {
			return err
		}
	}
	s.logf(gvisorReady)
	return nil
}

const gvisorReady = "gVisor is ready: set MCP_BRIDGE_RUNTIME=runsc (or runtime = \"runsc\" in the settings file) and codebridge doctor shows the sandbox's kernel"

// gvisorDocker registers runsc (bin) with the Docker daemon that answers
// here and probes a sandbox under it once the daemon knows it: dockerd
// reads daemon.json when it starts, so a daemon running before the entry
// was written must be restarted first.
func (s *setup) gvisorDocker(ctx context.Context, bin string) error {
	path, err := s.dockerRunsc(bin)
	if err != nil {
		return err
	}
	if !s.dockerKnowsRunsc(ctx) {
		return fmt.Errorf("the Docker daemon does not know the runtime runsc yet: restart it so that it reads %s (e.g. sudo systemctl restart docker), then run codebridge setup --engine docker --runtime runsc again", path)
	}
	if err := s.probeGVisor(ctx, "run", "--runtime", GVisor); err != nil {
		return err
	}
	s.logf(gvisorReady)
	return nil
}

// dockerKnowsRunsc reports whether the Docker daemon has a runtime named
// runsc.
func (s *setup) dockerKnowsRunsc(ctx context.Context) bool {
	out, err := s.output(ctx, "info", "--format", "{{json .Runtimes}}")
	var runtimes map[string]json.RawMessage
	return err == nil && json.Unmarshal([]byte(out), &runtimes) == nil && runtimes[GVisor] != nil
}

// runscBinary finds runsc, installing Debian's package when it is missing.
func (s *setup) runscBinary(ctx context.Context) (string, error) {
	if bin := findRunsc(); bin != "" {
		return bin, nil
	}
	if err := s.packages(ctx, GVisor); err != nil {
		return "", fmt.Errorf("%w; where no package has it, install gVisor as https://gvisor.dev/docs/user_guide/install/ says, then run codebridge setup --runtime runsc again", err)
	}
	if bin := findRunsc(); bin != "" {
		return bin, nil
	}
	return "", errors.New("runsc is not on PATH after installing it: install gVisor as https://gvisor.dev/docs/user_guide/install/ says")
}

// findRunsc is runsc's path, "" when it is not installed: on PATH, else
// where Podman looks for it.
func findRunsc() string {
	if p, err := exec.LookPath(GVisor); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	for _, p := range []string{"/usr/bin/runsc", "/usr/sbin/runsc", "/usr/local/bin/runsc", "/usr/local/sbin/runsc"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// runscWrapper is the script Podman runs as runsc: Podman passes no
// arguments of its own choosing to a runtime, so the flags travel in it.
func runscWrapper(bin string) []byte {
	return []byte("#!/bin/sh\n" + gvisorHeader + "exec " + bin + " " + strings.Join(confine.GVisorArgs(), " ") + " \"$@\"\n")
}

// podmanRunsc is the containers.conf text that registers wrapper as the
// runtime named runsc.
func podmanRunsc(wrapper string) string {
	return fmt.Sprintf("[engine.runtimes]\nrunsc = [%q]\n", wrapper)
}

// runscWrapperPath is where the wrapper goes: system-wide for root, the
// user's own otherwise.
func (s *setup) runscWrapperPath() string {
	if os.Geteuid() == 0 {
		return "/usr/local/libexec/codebridge/runsc"
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "libexec", "codebridge", "runsc")
}

// runscDropIn names the containers.conf drop-in that registers runsc.
const runscDropIn = "51-codebridge-runsc.conf"

// writeOwn writes a file setup owns (it starts with gvisorHeader), asking
// first; a file of that name not written by setup is left alone.
func (s *setup) writeOwn(path string, data []byte, mode os.FileMode, what string) error {
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		s.logf("%s is in place: %s", what, path)
		return nil
	}
	if err == nil && !bytes.Contains(old, []byte(gvisorHeader)) {
		s.logf("%s exists and was not written by codebridge, so it is left alone. For %s it should read:\n%s", path, what, data)
		return fmt.Errorf("%s is not codebridge's: change it as shown above, or remove it, then run codebridge setup --runtime runsc again", path)
	}
	s.logf("writing %s, %s:\n%s", path, what, data)
	if !s.consent(fmt.Sprintf("Write %s?", path)) {
		return fmt.Errorf("writing %s: %w", path, ErrNeedsConsent)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("%w: write the file above yourself (as root for system folders)", err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("%w: write the file above yourself (as root for system folders)", err)
	}
	return os.Chmod(path, mode) // whatever the umask
}

// registered reports whether Podman's runtime runsc is wrapper.
func (s *setup) registered(ctx context.Context, wrapper string) bool {
	out, err := s.output(ctx, "--runtime", GVisor, "info", "--format", "{{.Host.OCIRuntime.Path}}")
	return err == nil && out == wrapper
}

// gvisorProbe runs in the probe container: it prints ok when the kernel is
// gVisor's (its log, which Linux keeps from code, says so) and a thread
// starts under the sandbox's seccomp profile.
const gvisorProbe = `import ctypes, os, threading
buf = ctypes.create_string_buffer(4096)
n = ctypes.CDLL(None).klogctl(3, buf, len(buf))
t = threading.Thread(target=lambda: None); t.start(); t.join()
print("ok" if b"gVisor" in buf.raw[:max(n, 0)] else "the kernel is not gVisor's but Linux " + os.uname().release)`

// probeGVisor starts a container under runsc as codebridge would (no
// network, nobody, the seccomp profile for gVisor) and checks that gVisor
// runs it. run is the engine's command that runs a container under runsc.
func (s *setup) probeGVisor(ctx context.Context, run ...string) error {
	dir, err := os.MkdirTemp("", "codebridge-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // the Podman service may run as another user
		return err
	}
	profile, err := confine.WriteSeccompProfile(dir, GVisor)
	if err != nil {
		return err
	}
	out, err := s.output(ctx, append(run, "--rm", "--network", "none", "--user", confine.DefaultUser,
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--security-opt", "seccomp="+profile, s.Image, "python3", "-c", gvisorProbe)...)
	if err == nil && out != "ok" {
		err = fmt.Errorf("printed %q instead of ok", out)
	}
	if err != nil {
		s.logf("a probe container under runsc failed: %s", out)
		if s.Engine == EngineDocker {
			return fmt.Errorf("docker run --runtime runsc cannot run the sandbox: %v; 'docker info' lists the runtimes Docker knows", err)
		}
		return fmt.Errorf("podman --runtime runsc cannot run the sandbox: %v; 'podman --runtime runsc info' shows the runtime Podman found", err)
	}
	s.logf("%s runs the sandbox under gVisor (runsc)", s.name)
	return nil
}

// dockerRunsc registers runsc with Docker in daemon.json, with its flags as
// runtimeArgs, asking first, and returns daemon.json's path; dockerd reads
// it when it starts. Docker 20.10 needs the flags there: it has no
// per-container runtime arguments.
func (s *setup) dockerRunsc(bin string) (string, error) {
	path := s.dockerDaemonJSON()
	want := map[string]any{"path": bin, "runtimeArgs": confine.GVisorArgs()}
	conf := map[string]any{}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return path, err
	default:
		if err := json.Unmarshal(old, &conf); err != nil {
			return path, fmt.Errorf("%s is not JSON codebridge can read (%v): fix it, then run codebridge setup --runtime runsc again", path, err)
		}
	}
	merged, changed, err := withRunsc(conf, want)
	if err != nil {
		s.logf("%s registers a runtime runsc of its own, so it is left alone; for codebridge's sandboxes it should read:\n  \"runsc\": %s", path, jsonText(want))
		return path, fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		s.logf("Docker's registration of runsc is in place: %s", path)
		return path, nil
	}
	s.logf("Docker is installed: registering runsc in %s as\n  \"runsc\": %s", path, jsonText(want))
	if !s.consent(fmt.Sprintf("Write %s?", path)) {
		return path, fmt.Errorf("writing %s: %w", path, ErrNeedsConsent)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return path, err
	}
	if err := os.WriteFile(path, append(merged, '\n'), 0o644); err != nil {
		return path, fmt.Errorf("%w: write the entry above yourself (as root for /etc/docker)", err)
	}
	s.logf("wrote %s: restart dockerd (e.g. sudo systemctl restart docker) for Docker to know runsc", path)
	return path, nil
}

// withRunsc adds runtimes.runsc = want to conf, a daemon.json, and says
// whether that changed it; a runsc entry that differs is an error.
func withRunsc(conf map[string]any, want map[string]any) ([]byte, bool, error) {
	runtimes, _ := conf["runtimes"].(map[string]any)
	if runtimes == nil {
		runtimes = map[string]any{}
	}
	if have, ok := runtimes[GVisor]; ok {
		if jsonText(have) == jsonText(want) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("runtime runsc is registered as %s, without all of codebridge's flags (%s)", jsonText(have), strings.Join(confine.GVisorArgs(), " "))
	}
	runtimes[GVisor] = want
	conf["runtimes"] = runtimes
	out, err := json.MarshalIndent(conf, "", "  ")
	return out, true, err
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// dockerDaemonJSON is the daemon.json of the Docker that runs here: rootful
// for root, rootless (~/.config/docker) otherwise.
func (s *setup) dockerDaemonJSON() string {
	if os.Geteuid() == 0 {
		return "/etc/docker/daemon.json"
	}
	return filepath.Join(s.configHome(), "docker", "daemon.json")
}

// knownRuntime checks that runtime is one setup can prepare.
func knownRuntime(runtime string) error {
	if runtime == "" || runtime == GVisor {
		return nil
	}
	return fmt.Errorf("--runtime %s: codebridge setup prepares runsc (gVisor) only; register %s with Podman yourself ([engine.runtimes] in containers.conf) and set MCP_BRIDGE_RUNTIME=%s", runtime, runtime, runtime)
}
