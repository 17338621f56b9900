package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// sshPodman is a Podman reachable only through an sshd on 127.0.0.1 that
// accepts one key, both made for the test.
type sshPodman struct {
	URI      string // ssh://root@127.0.0.1:PORT/.../podman.sock
	Identity string // the private key sshd accepts
	Home     string // a HOME for clients, whose known_hosts ssh fills
	accepted atomic.Int64
}

// startSSHPodman starts a Podman API service on a private socket and an sshd
// that serves each connection accepted on a loopback port in inetd mode
// (sshd -i), so no port is guessed. scripts/test.sh installs openssh-server.
func startSSHPodman(t testing.TB) *sshPodman {
	t.Helper()
	podmanBin := testenv.RequirePodmanBinary(t)
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	if _, err := os.Stat(sshd); err != nil {
		testenv.Missing(t, "sshd", "apt-get install openssh-server (scripts/test.sh does)")
	}
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root", "the loopback sshd of this test logs in as root")
	}
	dir, err := os.MkdirTemp("", "cbssh") // short: the socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, key := range []string{"host", "id"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "codebridge-test", "-f", filepath.Join(dir, key)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "id.pub"))
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`HostKey %[1]s/host
AuthorizedKeysFile %[1]s/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowStreamLocalForwarding yes
PidFile none
LogLevel ERROR
`, dir)
	if err := errors.Join(
		os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600),
		os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600),
		os.MkdirAll("/run/sshd", 0o755), // sshd's privilege separation directory
		os.MkdirAll(filepath.Join(dir, "home"), 0o700),
	); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sshd, "-t", "-f", filepath.Join(dir, "sshd_config")).CombinedOutput(); err != nil {
		t.Fatalf("sshd -t: %v: %s", err, out)
	}

	sock := startPodmanService(t, podmanBin, dir)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sshPodman{
		URI:      fmt.Sprintf("ssh://root@%s%s", ln.Addr(), sock),
		Identity: filepath.Join(dir, "id"),
		Home:     filepath.Join(dir, "home"),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			f, err := conn.(*net.TCPConn).File()
			conn.Close()
			if err != nil {
				continue
			}
			cmd := exec.Command(sshd, "-i", "-f", filepath.Join(dir, "sshd_config"))
			cmd.Stdin, cmd.Stdout = f, f
			if err := cmd.Start(); err == nil {
				go func() { cmd.Wait(); f.Close() }()
			} else {
				f.Close()
			}
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return s
}

// startPodmanService starts a Podman API service on a private socket in dir
// and returns the socket's path once it is there.
func startPodmanService(t testing.TB, podmanBin, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "podman.sock")
	svc := exec.Command(podmanBin, "system", "service", "--time=0", "unix://"+sock)
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Process.Kill(); svc.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			return sock
		}
		if i == 400 {
			t.Fatalf("podman system service made no socket at %s in 20 s", sock)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startTCPPodman serves a private Podman on a loopback TCP port, as
// CONTAINER_HOST=tcp://... reaches one: each connection accepted there is
// piped to the service's unix socket, so no port is guessed. It returns the
// URI and a count of the connections accepted.
func startTCPPodman(t testing.TB) (string, *atomic.Int64) {
	t.Helper()
	podmanBin := testenv.RequirePodmanBinary(t)
	dir, err := os.MkdirTemp("", "cbtcp") // short: the socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := startPodmanService(t, podmanBin, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var conns sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			out, err := net.Dial("unix", sock)
			if err != nil {
				in.Close()
				continue
			}
			conns.Go(func() { pipe(in, out) })
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done; conns.Wait() })
	return "tcp://" + ln.Addr().String(), &accepted
}

// pipe copies between a and b both ways until either side ends, then closes both.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	for _, dir := range [][2]net.Conn{{a, b}, {b, a}} {
		wg.Go(func() {
			io.Copy(dir[0], dir[1])
			a.Close()
			b.Close()
		})
	}
	wg.Wait()
}

// TestRemotePodmanOverSSH runs code through a Podman that codebridge reaches
// only over ssh, as CONTAINER_HOST=ssh://... with CONTAINER_SSHKEY names it.
func TestRemotePodmanOverSSH(t *testing.T) {
	testenv.OnlyOn(t, "podman")
	requirePodman(t)
	s := startSSHPodman(t)
	env := bridgeEnv(t, t.TempDir(), "CONTAINER_HOST="+s.URI, "CONTAINER_SSHKEY="+s.Identity, "HOME="+s.Home)
	cs, stderr, cmd := sessionProcWith(t, env, nil)

	r := runPython(t, cs, map[string]any{"code": "import socket\nx = sum(range(10))\nprint(x, socket.gethostname() != '')"})
	if r.IsError || r.Out.Stdout != "45 True\n" {
		t.Fatalf("run through Podman over ssh: %s", r.Text)
	}
	r = runPython(t, cs, map[string]any{"code": "print(x * 2)"})
	if r.IsError || r.Out.Stdout != "90\n" {
		t.Errorf("second run of the session: %s", r.Text)
	}
	// codebridge's seccomp profile reached the Podman host through the API:
	// a user namespace, which Podman's default profile allows, is refused.
	r = runPython(t, cs, map[string]any{"code": `
import subprocess
r = subprocess.run(["unshare", "-Ur", "true"], capture_output=True, text=True)
print(r.returncode != 0, r.stderr.strip())`})
	if r.IsError || !strings.HasPrefix(r.Out.Stdout, "True ") || !strings.Contains(r.Out.Stdout, "Operation not permitted") {
		t.Errorf("unshare -Ur in a sandbox over ssh: %s", r.Text)
	}
	if !strings.Contains(stderr.String(), "put the sandbox's seccomp profile on the Podman host") {
		t.Errorf("codebridge's log does not say it placed the seccomp profile\n%s", stderr.String())
	}
	if s.accepted.Load() == 0 {
		t.Errorf("the loopback sshd accepted no connection; codebridge reached Podman another way\n%s", stderr.String())
	}
	if log := stderr.String(); !strings.Contains(log, "podman="+s.URI) || strings.Contains(log, "started podman API service") {
		t.Errorf("codebridge's log does not show it using %s (and only it)\n%s", s.URI, log)
	}
	if known, err := os.ReadFile(filepath.Join(s.Home, ".ssh", "known_hosts")); err != nil || !strings.Contains(string(known), "ssh-ed25519") {
		t.Errorf("known_hosts after the first connection: %q, %v; want the loopback host's key", known, err)
	}
	pid := cmd.Process.Pid
	cs.Close()
	if left := containersLeft(t, pid); len(left) > 0 {
		t.Errorf("containers left after codebridge exited: %v", left)
	}

	// The same Podman as a system connection, with its identity, chosen by
	// CONTAINER_CONNECTION as the podman command would. CONTAINERS_CONF
	// keeps the connection out of the machine's own containers.conf.
	conf := filepath.Join(t.TempDir(), "containers.conf")
	dests := fmt.Sprintf("[engine]\n[engine.service_destinations]\n[engine.service_destinations.cbtest]\nuri = %q\nidentity = %q\n", s.URI, s.Identity)
	if err := os.WriteFile(conf, []byte(dests), 0o644); err != nil {
		t.Fatal(err)
	}
	before := s.accepted.Load()
	env = bridgeEnv(t, t.TempDir(), "CONTAINER_CONNECTION=cbtest", "CONTAINERS_CONF="+conf, "HOME="+s.Home)
	cs, stderr, _ = sessionProcWith(t, env, nil)
	if r := runPython(t, cs, map[string]any{"code": "print('by name')"}); r.IsError || r.Out.Stdout != "by name\n" {
		t.Errorf("run through the system connection: %s", r.Text)
	}
	if s.accepted.Load() == before || !strings.Contains(stderr.String(), "podman="+s.URI) {
		t.Errorf("CONTAINER_CONNECTION=cbtest did not reach Podman through the sshd\n%s", stderr.String())
	}

	env = bridgeEnv(t, t.TempDir(), "CONTAINER_CONNECTION=nope", "CONTAINERS_CONF="+conf, "HOME="+s.Home)
	cs, _, _ = sessionProcWith(t, env, nil)
	if r := runPython(t, cs, map[string]any{"code": "print(1)"}); !r.IsError || !strings.Contains(r.Text, "CONTAINER_CONNECTION=nope: Podman has no system connection of that name (it has cbtest)") {
		t.Errorf("an unknown CONTAINER_CONNECTION: %s", r.Text)
	}
}

// TestRemotePodmanOverTCP runs code through a Podman that codebridge reaches
// only by CONTAINER_HOST=tcp://..., with codebridge's seccomp profile put on
// the Podman host through the API.
func TestRemotePodmanOverTCP(t *testing.T) {
	testenv.OnlyOn(t, "podman")
	requirePodman(t)
	uri, accepted := startTCPPodman(t)
	env := bridgeEnv(t, t.TempDir(), "CONTAINER_HOST="+uri)
	cs, stderr, cmd := sessionProcWith(t, env, nil)
	r := runPython(t, cs, map[string]any{"code": `
import subprocess
x = 21
r = subprocess.run(["unshare", "-Ur", "true"], capture_output=True)
print(r.returncode != 0)`})
	if r.IsError || r.Out.Stdout != "True\n" {
		t.Fatalf("run through Podman over tcp (want unshare refused): %s\n%s", r.Text, stderr.String())
	}
	if r := runPython(t, cs, map[string]any{"code": "print(x * 2)"}); r.IsError || r.Out.Stdout != "42\n" {
		t.Errorf("second run of the session: %s", r.Text)
	}
	if accepted.Load() == 0 {
		t.Errorf("the loopback port accepted no connection; codebridge reached Podman another way\n%s", stderr.String())
	}
	if log := stderr.String(); !strings.Contains(log, "podman="+uri) || !strings.Contains(log, "put the sandbox's seccomp profile on the Podman host") {
		t.Errorf("codebridge's log does not show it using %s with the profile placed there\n%s", uri, log)
	}
	pid := cmd.Process.Pid
	cs.Close()
	if left := containersLeft(t, pid); len(left) > 0 {
		t.Errorf("containers left after codebridge exited: %v", left)
	}
}

// BenchmarkSSH is BenchmarkRunPythonPrint with Podman reached over ssh (a
// loopback sshd, so the figures are the cost of ssh and not of a network):
//
//	go test ./cmd/codebridge -run '^$' -bench SSH -benchtime 100x
func BenchmarkSSH(b *testing.B) {
	requirePodman(b)
	s := startSSHPodman(b)
	env := []string{"CONTAINER_HOST=" + s.URI, "CONTAINER_SSHKEY=" + s.Identity, "HOME=" + s.Home}
	b.Run("live-session", func(b *testing.B) { benchRunPrint(b, 0, env...) })
	b.Run("sessions-off/agent-paced", func(b *testing.B) { benchRunPrint(b, time.Second, append(env, "MCP_BRIDGE_SESSIONS=0")...) })
}
