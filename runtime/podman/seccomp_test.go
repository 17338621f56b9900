package podman

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// seccompProbe tries what the profile denies and what a sandbox needs, and
// prints one line per probe.
const seccompProbe = `
import ctypes, errno, os, platform, subprocess, threading, multiprocessing, asyncio, select, mmap, socket, tempfile, time
libc = ctypes.CDLL(None, use_errno=True)
def denied(name, rc, want=errno.EPERM):
    e = ctypes.get_errno()
    print(name, "denied" if rc == -1 and e == want else "ALLOWED rc=%d errno=%d" % (rc, e))
CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17
denied("unshare-user", libc.unshare(CLONE_NEWUSER))
denied("unshare-mount", libc.unshare(CLONE_NEWNS))
ns = "/proc/self/ns/uts"  # gVisor has none: seccomp refuses setns before it reads its fd
denied("setns", libc.setns(os.open(ns, os.O_RDONLY) if os.path.exists(ns) else -1, 0))
denied("mount", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
if hasattr(os, "unshare"):  # Python 3.12+
    try:
        os.unshare(os.CLONE_NEWUSER); print("os-unshare ALLOWED")
    except PermissionError:
        print("os-unshare denied")
nr = {"x86_64": dict(clone=56, clone3=435, keyctl=250, bpf=321, io_uring_setup=425, userfaultfd=323),
      "aarch64": dict(clone=220, clone3=435, keyctl=219, bpf=280, io_uring_setup=425, userfaultfd=282)}.get(platform.machine())
if nr:
    rc = libc.syscall(nr["clone"], CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)  # fork into a new user namespace
    if rc == 0: os._exit(0)
    e = ctypes.get_errno()
    if rc > 0: os.waitpid(rc, 0)
    ctypes.set_errno(e); denied("clone-newuser", rc)
    denied("clone3-enosys", libc.syscall(nr["clone3"], None, 0), errno.ENOSYS)
    denied("keyctl", libc.syscall(nr["keyctl"], 0, 0, 0, 0, 0))  # KEYCTL_GET_KEYRING_ID
    denied("bpf", libc.syscall(nr["bpf"], 0, 0, 0))
    denied("io_uring_setup", libc.syscall(nr["io_uring_setup"], 1, 0))
    denied("userfaultfd", libc.syscall(nr["userfaultfd"], 0))
pid = os.fork()
if pid == 0:  # a child asks to be traced, so a stray signal cannot stop the probe itself
    os._exit(0 if libc.ptrace(0, 0, None, None) == -1 and ctypes.get_errno() == errno.EPERM else 1)
print("ptrace", "denied" if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 else "ALLOWED")
r = subprocess.run(["unshare", "-Ur", "true"], capture_output=True)
print("unshare-cli", "denied" if r.returncode != 0 else "ALLOWED")
# What code needs still works.
out = []
t = threading.Thread(target=lambda: out.append("thread")); t.start(); t.join()
out.append(subprocess.run(["/bin/sh", "-c", "echo sh"], capture_output=True, text=True).stdout.strip())
def child(conn): conn.send("mp"); conn.close()
ctx = multiprocessing.get_context("fork")
a, b = ctx.Pipe(); p = ctx.Process(target=child, args=(b,)); p.start(); out.append(a.recv()); p.join()
pid = os.fork()
if pid == 0: os._exit(7)
out.append("fork%d" % os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
async def co(): await asyncio.sleep(0.01); return "asyncio"
out.append(asyncio.run(co()))
ep = select.epoll(); ep.close(); select.poll(); select.select([], [], [], 0); out.append("poll")
m = mmap.mmap(-1, 4096); m[:2] = b"mm"; out.append(m[:2].decode())
s1, s2 = socket.socketpair(); s1.send(b"sp"); out.append(s2.recv(2).decode())
with tempfile.NamedTemporaryFile(dir="/tmp") as f: f.write(b"x"); out.append("tmp")
time.sleep(0.01)
print("works", " ".join(out))
`

// TestSeccompProfile runs the probe in a sandbox container with the engine's
// profile: new namespaces, mounts, keyrings, bpf, io_uring and ptrace are
// refused, and threads, processes, asyncio and the rest work.
//
// With Podman's default profile instead (/usr/share/containers/seccomp.json
// as Spec.SeccompProfile) the probe reports unshare-user (EINVAL: the
// runner has threads), clone-newuser (a child in a new user namespace),
// clone3-enosys, keyctl, io_uring_setup, ptrace and unshare-cli as ALLOWED.
func TestSeccompProfile(t *testing.T) {
	e := newTestEngine(t, EngineOptions{})
	res, err := runOnce(t, e, seccompProbe)
	if err != nil || res.Error != nil {
		t.Fatalf("probe: %v %+v\n%s", err, res.Error, res.Stderr)
	}
	e.mu.Lock()
	profile := e.profile
	e.mu.Unlock()
	if profile == "" {
		t.Fatal("the engine used no seccomp profile with a local Podman")
	}
	probes := []string{"unshare-user", "unshare-mount", "setns", "mount", "ptrace", "unshare-cli"}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" { // called by syscall number
		probes = append(probes, "clone-newuser", "clone3-enosys", "keyctl", "bpf", "io_uring_setup", "userfaultfd")
	}
	if strings.Contains(res.Stdout, "os-unshare ") {
		probes = append(probes, "os-unshare")
	}
	var allowed []string
	for _, name := range probes {
		if !strings.Contains(res.Stdout, name+" denied\n") {
			allowed = append(allowed, name)
		}
	}
	if len(allowed) > 0 {
		t.Errorf("not denied: %v\n%s", allowed, res.Stdout)
	}
	if want := "works thread sh mp fork7 asyncio poll mm sp tmp\n"; !strings.HasSuffix(res.Stdout, want) {
		t.Errorf("usual workloads:\n%s\nwant a last line %q", res.Stdout, want)
	}
}

func TestSharesFiles(t *testing.T) {
	for _, tt := range []struct {
		uri  string
		want bool
	}{
		{"unix:///run/podman/podman.sock", runtime.GOOS == "linux"},
		{"ssh://core@localhost:2222/run/podman/podman.sock", false},
		{"tcp://127.0.0.1:8080", false},
	} {
		if got := SharesFiles(tt.uri); got != tt.want {
			t.Errorf("SharesFiles(%q) = %v, want %v", tt.uri, got, tt.want)
		}
	}
}

// TestPlaceSeccompProfile puts the profile on the Podman host through the
// API, as for a Podman reached over ssh: the file in the volume is the
// profile, a second placement finds the volume there, and no helper
// container is left.
func TestPlaceSeccompProfile(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	for range 2 {
		path, err := c.placeSeccompProfile(t.Context(), img, testenv.Runtime())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(path, "codebridge-seccomp-"+confine.SeccompID(testenv.Runtime())) || filepath.Base(path) != "seccomp.json" {
			t.Errorf("profile path %q; want seccomp.json in the volume named by its content", path)
		}
		// This Podman runs here, so its volume can be read directly.
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, confine.SeccompProfile(testenv.Runtime())) {
			t.Errorf("the file in the volume is not the profile (%d bytes, %v)", len(got), err)
		}
	}
	list, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Labels[labelClient] == c.owner[labelClient] {
			t.Errorf("container %s left behind by placing the profile", shortID(s.ID))
		}
	}
}

// BenchmarkStartSeccomp starts containers alternately with Podman's default
// seccomp profile and with codebridge's, and reports the median start time
// (create, attach, start) of each.
func BenchmarkStartSeccomp(b *testing.B) {
	c := testClient(b)
	img := testImage(b, c)
	ours, err := confine.WriteSeccompProfile(b.TempDir(), testenv.Runtime())
	if err != nil {
		b.Fatal(err)
	}
	modes := []struct {
		name    string
		profile string
		times   []time.Duration
	}{{name: "podman-default-ms"}, {name: "codebridge-ms", profile: ours}}
	for b.Loop() {
		for i := range modes {
			m := &modes[i]
			start := time.Now()
			ct, err := c.start(b.Context(), confine.Spec{Image: img, Command: []string{"true"}}, placement{seccomp: m.profile})
			if err != nil {
				b.Fatal(err)
			}
			m.times = append(m.times, time.Since(start))
			if err := ct.Remove(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, m := range modes {
		slices.Sort(m.times)
		b.ReportMetric(float64(m.times[len(m.times)/2].Microseconds())/1000, m.name)
	}
	b.ReportMetric(0, "ns/op")
}

// TestSeccompRewritten: a profile removed from the state directory while
// codebridge runs is written again for the next container.
func TestSeccompRewritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the profile is used only with a Podman on this Linux host")
	}
	e := NewEngine(EngineOptions{StateDir: t.TempDir()})
	c := &Client{uri: "unix:///run/podman/podman.sock"}
	path, err := e.seccomp(t.Context(), c, "")
	if err != nil || path == "" {
		t.Fatalf("seccomp: %q, %v", path, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if again, err := e.seccomp(t.Context(), c, ""); err != nil || again != path {
		t.Fatalf("seccomp again: %q, %v; want %q", again, err, path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("profile not written again: %v", err)
	}
}

// TestSeccompUnwritable: a local Podman without the profile is an error, not
// a sandbox quietly running with Podman's default.
func TestSeccompUnwritable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the profile is used only with a Podman on this Linux host")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := NewEngine(EngineOptions{StateDir: filepath.Join(file, "state")})
	path, err := e.seccomp(t.Context(), &Client{uri: "unix:///run/podman/podman.sock"}, "")
	if err == nil || !strings.Contains(err.Error(), "seccomp profile") {
		t.Fatalf("seccomp: %q, %v; want an error about the profile", path, err)
	}
}

// BenchmarkPlaceSeccompProfile is what a remote Podman's first sandbox pays
// once per connection to receive the profile (here on the local socket, so
// without the ssh round trips).
//
//	go test ./runtime/podman -run '^$' -bench PlaceSeccompProfile -benchtime 10x
func BenchmarkPlaceSeccompProfile(b *testing.B) {
	c := testClient(b)
	img := testImage(b, c)
	for b.Loop() {
		if _, err := c.placeSeccompProfile(b.Context(), img, testenv.Runtime()); err != nil {
			b.Fatal(err)
		}
	}
}
