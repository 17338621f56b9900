package podman

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
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
denied("setns", libc.setns(os.open("/proc/self/ns/uts", os.O_RDONLY), 0))
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

// TestSeccompProfileContents checks the embedded profile's shape, so that an
// edit cannot quietly turn a refusal into an allowance.
func TestSeccompProfileContents(t *testing.T) {
	var p struct {
		DefaultAction string   `json:"defaultAction"`
		Architectures []string `json:"architectures"`
		Syscalls      []struct {
			Names    []string `json:"names"`
			Action   string   `json:"action"`
			ErrnoRet *int     `json:"errnoRet"`
			Args     []struct {
				Index    int    `json:"index"`
				Value    uint64 `json:"value"`
				ValueTwo uint64 `json:"valueTwo"`
				Op       string `json:"op"`
			} `json:"args"`
		} `json:"syscalls"`
	}
	dec := json.NewDecoder(bytes.NewReader(seccompProfile))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("seccomp.json: %v", err)
	}
	if p.DefaultAction != "SCMP_ACT_ALLOW" {
		t.Errorf("defaultAction %q", p.DefaultAction)
	}
	for _, arch := range []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"} {
		if !slices.Contains(p.Architectures, arch) {
			t.Errorf("architecture %s missing", arch)
		}
	}
	const eperm, enosys = 1, 38
	denied := map[string]int{} // unconditional refusals: name -> errno
	var cloneFlags []uint64    // flags whose presence refuses clone
	for _, r := range p.Syscalls {
		if r.Action != "SCMP_ACT_ERRNO" || r.ErrnoRet == nil {
			t.Errorf("rule %v: action %s, errnoRet %v; want SCMP_ACT_ERRNO with an errno", r.Names, r.Action, r.ErrnoRet)
			continue
		}
		if len(r.Args) == 0 {
			for _, n := range r.Names {
				denied[n] = *r.ErrnoRet
			}
			continue
		}
		a := r.Args[0]
		if !slices.Equal(r.Names, []string{"clone"}) || len(r.Args) != 1 || a.Index != 0 ||
			a.Op != "SCMP_CMP_MASKED_EQ" || a.Value != a.ValueTwo || *r.ErrnoRet != eperm {
			t.Errorf("unexpected conditional rule %+v", r)
			continue
		}
		cloneFlags = append(cloneFlags, a.Value)
	}
	for _, n := range []string{
		"unshare", "setns",
		"mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
		"keyctl", "add_key", "request_key",
		"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
		"ptrace", "process_vm_readv", "process_vm_writev",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"name_to_handle_at", "open_by_handle_at",
	} {
		if denied[n] != eperm {
			t.Errorf("%s: errno %d, want EPERM", n, denied[n])
		}
	}
	if denied["clone3"] != enosys {
		t.Errorf("clone3: errno %d, want ENOSYS so that glibc falls back to clone", denied["clone3"])
	}
	if _, ok := denied["clone"]; ok {
		t.Error("clone is refused unconditionally; threads and fork need it")
	}
	// CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
	// (CLONE_NEWTIME only exists for clone3 and unshare).
	want := []uint64{0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000}
	slices.Sort(cloneFlags)
	if !slices.Equal(cloneFlags, want) {
		t.Errorf("clone refused for flags %#x, want %#x", cloneFlags, want)
	}
}

func TestWriteSeccompProfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path, err := writeSeccompProfile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "seccomp-") {
		t.Errorf("path %s, want a seccomp-<hash>.json in %s", path, dir)
	}
	check := func() {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("mode %v, want 0644 (the Podman service may run as another user)", fi.Mode())
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, seccompProfile) {
			t.Error("file differs from the embedded profile")
		}
	}
	check()
	// A damaged file is replaced; a good one is kept.
	if err := os.WriteFile(path, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, err := writeSeccompProfile(dir); err != nil || again != path {
		t.Fatalf("second write: %s, %v; want %s", again, err, path)
	}
	check()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the state directory, want only the profile", len(ents))
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
		path, err := c.placeSeccompProfile(t.Context(), img)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(path, "codebridge-seccomp-"+profileID()) || filepath.Base(path) != "seccomp.json" {
			t.Errorf("profile path %q; want seccomp.json in the volume named by its content", path)
		}
		// This Podman runs here, so its volume can be read directly.
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, seccompProfile) {
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
	ours, err := writeSeccompProfile(b.TempDir())
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
			ct, err := c.Start(b.Context(), Spec{Image: img, Command: []string{"true"}, SeccompProfile: m.profile})
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
		if _, err := c.placeSeccompProfile(b.Context(), img); err != nil {
			b.Fatal(err)
		}
	}
}
