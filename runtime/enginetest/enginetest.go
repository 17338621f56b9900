// Package enginetest is the conformance suite of the engine drivers under
// runtime/ (runtime/podman, runtime/docker): one set of tests that each
// driver's tests run against their real engine, as database/sql drivers
// share a compliance suite, so that "the same guarantees on every engine"
// is a test. It checks what runtime/confine asks of every engine: a
// container starts and its stream carries data both ways, exit codes and
// the OOM kill are reported, the hardening holds when probed from inside
// (user, read-only root, no network, no capabilities, limits, tmpfs, the
// seccomp profile refusing user namespaces and mounts), a container is gone
// once its stream closes and once its owner is killed with SIGKILL, labels
// name the owner, and the sweep removes only dead owners' containers.
package enginetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// Start starts a container of an engine, from the spec the engine was made
// with.
type Start func(ctx context.Context) (sandbox.Container, error)

// Driver is what the suite needs of an engine driver, connected to its
// engine.
type Driver struct {
	Name  string // the engine as people call it, e.g. "Docker"
	Image string // the sandbox image, present in the engine
	// Init is what pid 1 of a container is called (/proc/1/comm): the
	// engine's init, e.g. "docker-init".
	Init string
	// New returns an engine of the driver whose containers run spec (its
	// Image filled in by the engine), closed when t ends.
	New func(t testing.TB, spec confine.Spec) Start
	// StartOwned starts a container of spec (Image set) labelled as owner's
	// (ownership labels, [confine.Owner.Labels]) and returns its ID; it runs
	// until removed.
	StartOwned func(ctx context.Context, spec confine.Spec, owner map[string]string) (string, error)
	// List returns the engine's codebridge containers ([confine.LabelManaged]):
	// their labels by ID.
	List func(ctx context.Context) (map[string]map[string]string, error)
	// Sweep removes, as self, the containers of owners that no longer run
	// ([confine.Owner.Stale]), without the grace for young containers, and
	// says how many it removed.
	Sweep func(ctx context.Context, self confine.Owner) (int, error)
	// Remove removes a container by ID; a container gone is not an error.
	Remove func(ctx context.Context, id string) error
	// Differs names what the engine cannot give as the others do, with
	// why: a hardening probe's key (e.g. "exec_tmp"), or a subtest such as
	// "GoneWithStream/socket". Each is not checked there, and its reason is
	// logged. Kubernetes, for one, mounts no emptyDir noexec and has no pids
	// limit per pod.
	Differs map[string]string
}

// Run runs the suite against d.
func Run(t *testing.T, d Driver) {
	t.Run("RoundTrip", func(t *testing.T) { roundTrip(t, d) })
	t.Run("ExitCode", func(t *testing.T) { exitCode(t, d) })
	t.Run("OOM", func(t *testing.T) { oom(t, d) })
	t.Run("Hardening", func(t *testing.T) { hardening(t, d) })
	t.Run("Seccomp", func(t *testing.T) { seccomp(t, d) })
	t.Run("Labels", func(t *testing.T) { labels(t, d) })
	t.Run("GoneWithStream", func(t *testing.T) { goneWithStream(t, d) })
	t.Run("GoneWithOwner", func(t *testing.T) { goneWithOwner(t, d) })
	t.Run("Sweep", func(t *testing.T) { sweep(t, d) })
}

// start starts a container of a new engine running argv, removed when t
// ends.
func start(t *testing.T, d Driver, spec confine.Spec) sandbox.Container {
	t.Helper()
	ct, err := d.New(t, Spec(spec))(t.Context())
	if err != nil {
		t.Fatalf("starting a container on %s: %v", d.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ct.Remove(ctx)
	})
	return ct
}

// exit waits for ct's exit code and OOM verdict.
func exit(t *testing.T, ct sandbox.Container) (int, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	code, oom, err := ct.Exit(ctx)
	if err != nil {
		t.Fatalf("Exit: %v", err)
	}
	return code, oom
}

// Spec is s under the OCI runtime the tests run sandboxes under
// ([testenv.Runtime]: runsc in scripts/test.sh's gVisor phase) unless it
// names one.
func Spec(s confine.Spec) confine.Spec {
	if s.Runtime == "" {
		s.Runtime = testenv.Runtime()
	}
	return s
}

func python3(code string) []string { return []string{"python3", "-c", code} }

func roundTrip(t *testing.T, d Driver) {
	ct := start(t, d, confine.Spec{Command: python3("import sys\nprint('ready', flush=True)\nfor l in sys.stdin:\n    print(l.strip().upper(), flush=True)")})
	s := ct.Stream()
	br := bufio.NewReader(s)
	if l, err := br.ReadString('\n'); l != "ready\n" {
		t.Fatalf("first line %q, %v", l, err)
	}
	for _, word := range []string{"hello", "world", strings.Repeat("x", 1<<20)} {
		if _, err := io.WriteString(s, word+"\n"); err != nil {
			t.Fatal(err)
		}
		l, err := br.ReadString('\n')
		if err != nil || l != strings.ToUpper(word)+"\n" {
			t.Fatalf("answer to %.10q: %.10q (%d bytes), %v", word, l, len(l), err)
		}
	}
	s.Close() // its end of input: the process exits
	select {
	case <-ct.Done():
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("output still open a minute after the stream was closed")
	}
	if code, _ := exit(t, ct); code != 0 {
		t.Errorf("exit code %d after the end of input, want 0 (stderr %q)", code, ct.Stderr())
	}
}

func exitCode(t *testing.T, d Driver) {
	ct := start(t, d, confine.Spec{Command: python3("import sys; sys.stderr.write('bye'); sys.exit(3)")})
	<-ct.Done()
	if code, oom := exit(t, ct); code != 3 || oom {
		t.Errorf("exit code %d, oom %v; want 3, false", code, oom)
	}
	if ct.Stderr() != "bye" {
		t.Errorf("stderr %q, want bye", ct.Stderr())
	}
}

func oom(t *testing.T, d Driver) {
	ct := start(t, d, confine.Spec{
		Command: python3("print('allocating', flush=True); b = b'x' * (256 << 20); print('survived')"),
		Memory:  64 << 20,
	})
	out, _ := io.ReadAll(ct.Stream())
	if string(out) != "allocating\n" {
		t.Errorf("stdout %q, want only %q", out, "allocating\n")
	}
	code, oom := exit(t, ct)
	if !oom {
		t.Errorf("exit code %d, not reported as out of memory", code)
	}
	// Under gVisor the host's OOM killer may take a helper process of the
	// sandbox instead of its kernel, which then exits with a code of its own.
	if code != 137 && !confine.GVisor(testenv.Runtime()) {
		t.Errorf("exit code %d, want 137 (SIGKILL)", code)
	}
}

// probe runs inside a container and reports what the hardening looks like
// from there, as JSON on stdout.
const probe = `
import json, os, resource, subprocess, time
r = {}
def attempt(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return "errno %d" % e.errno
def write(p):
    with open(p, "w") as f:
        f.write("x")
def run(p):
    with open(p, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(p, 0o755)
    subprocess.run([p], check=True, capture_output=True)
def first(*paths):
    for p in paths:
        try:
            with open(p) as f:
                return f.read().strip()
        except OSError:
            pass
    return None
r["write_root"] = attempt(lambda: write("/x"))
r["write_usr"] = attempt(lambda: write("/usr/x"))
r["write_tmp"] = attempt(lambda: write("/tmp/x"))
r["write_work"] = attempt(lambda: write("/work/x"))
r["exec_tmp"] = attempt(lambda: run("/tmp/s.sh"))
r["exec_work"] = attempt(lambda: run("/work/s.sh"))
r["net"] = sorted(os.listdir("/sys/class/net"))
r["uid"], r["gid"] = os.getuid(), os.getgid()
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
    r[k] = status.get(k, "").strip() or None  # gVisor's has no CapAmb
r["nofile"] = list(resource.getrlimit(resource.RLIMIT_NOFILE))
r["nproc"] = list(resource.getrlimit(resource.RLIMIT_NPROC))
r["home"] = os.environ.get("HOME")
r["dontwritebytecode"] = os.environ.get("PYTHONDONTWRITEBYTECODE")
r["extra_env"] = os.environ.get("CB_TEST")
r["cwd"] = os.getcwd()
r["pid1"] = first("/proc/1/comm")
r["tmp_size"] = os.statvfs("/tmp").f_blocks * os.statvfs("/tmp").f_frsize
r["work_size"] = os.statvfs("/work").f_blocks * os.statvfs("/work").f_frsize
r["mem_limit"] = first("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max")
r["memsw_limit"] = first("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
r["swap_max"] = first("/sys/fs/cgroup/memory.swap.max")
r["pids_max"] = first("/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/pids.max")
r["cpu_quota"] = first("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu.max")
kids = []
try:
    for _ in range(1000):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid)
    r["fork_error"] = "none"
except OSError as e:
    r["fork_error"] = "errno %d" % e.errno
r["forked"] = len(kids)
for pid in kids:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
print(json.dumps(r))
`

// gvisorDiffers is what a sandbox under gVisor ([testenv.Runtime]) shows
// otherwise than under runc, by design: a hardening probe's key, and why.
var gvisorDiffers = map[string]string{
	"CapAmb":      "gVisor's /proc/self/status has no CapAmb",
	"NoNewPrivs":  "gVisor's /proc/self/status has no NoNewPrivs",
	"mem_limit":   "gVisor shows the sandbox no cgroup files",
	"pids_max":    "gVisor shows the sandbox no cgroup files; the host's pids limit is a backstop for gVisor's tasks",
	"cpu_quota":   "gVisor shows the sandbox no cgroup files",
	"memsw_limit": "gVisor shows the sandbox no cgroup files",
	"swap_max":    "gVisor shows the sandbox no cgroup files",
}

func hardening(t *testing.T, d Driver) {
	gvisor := confine.GVisor(testenv.Runtime())
	memory := int64(96 << 20)
	if gvisor {
		// gVisor's kernel and its page cache count against the sandbox's
		// limit on the host: the probe's 15 forked interpreters pass 96 MiB
		// there, and the whole sandbox is killed.
		memory = 256 << 20
	}
	ct := start(t, d, confine.Spec{
		Command:  python3(probe),
		Env:      map[string]string{"CB_TEST": "yes"},
		Memory:   memory,
		Pids:     16,
		CPUs:     0.5,
		TmpSize:  8 << 20,
		WorkSize: 4 << 20,
	})
	out, err := io.ReadAll(ct.Stream())
	if err != nil {
		t.Fatalf("reading stdout: %v", err)
	}
	var r map[string]any
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("probe output %q (stderr %q): %v", out, ct.Stderr(), err)
	}
	t.Logf("probe: %s", out)
	const erofs, eacces = "errno 30", "errno 13"
	checks := []struct {
		key  string
		want any
	}{
		{"write_root", erofs},
		{"write_usr", erofs},
		{"write_tmp", "ok"},
		{"write_work", "ok"},
		{"exec_tmp", eacces}, // noexec
		{"exec_work", eacces},
		{"net", []any{"lo"}},
		{"uid", 65534.0},
		{"gid", 65534.0},
		{"CapEff", "0000000000000000"},
		{"CapPrm", "0000000000000000"},
		{"CapBnd", "0000000000000000"},
		{"CapAmb", "0000000000000000"},
		{"NoNewPrivs", "1"},
		{"Seccomp", "2"}, // a seccomp filter
		{"nofile", []any{1024.0, 1024.0}},
		{"nproc", []any{16384.0, 16384.0}},
		{"home", "/tmp"},
		{"dontwritebytecode", "1"},
		{"extra_env", "yes"},
		{"cwd", "/work"},
		{"pid1", d.Init},
		{"tmp_size", float64(8 << 20)},
		{"work_size", float64(4 << 20)},
		{"mem_limit", strconv.Itoa(int(memory))},
		{"pids_max", "16"},
		{"fork_error", "errno 11"}, // EAGAIN from the pids cgroup (under gVisor, from RLIMIT_NPROC)
	}
	differs := d.Differs
	if gvisor {
		differs = maps.Clone(gvisorDiffers)
		maps.Copy(differs, d.Differs)
		for i, ck := range checks {
			switch ck.key {
			case "nproc": // the process limit (see confine.Hardened.Rlimits)
				checks[i].want = []any{16.0, 16.0}
			case "write_root", "write_usr": // refused all the same
				checks[i].want = eacces
			}
		}
	}
	for _, ck := range checks {
		if why, ok := differs[ck.key]; ok {
			t.Logf("%s not checked on %s: %s", ck.key, d.Name, why)
			continue
		}
		got, _ := json.Marshal(r[ck.key])
		want, _ := json.Marshal(ck.want)
		if !bytes.Equal(got, want) {
			t.Errorf("%s = %s, want %s", ck.key, got, want)
		}
	}
	// No swap: memory+swap equals memory (cgroup v1), or swap.max is 0 (v2).
	if sw := r["memsw_limit"]; sw != nil && sw != strconv.Itoa(int(memory)) {
		t.Errorf("memsw_limit = %v, want %d", sw, memory)
	}
	if sw := r["swap_max"]; sw != nil && sw != "0" {
		t.Errorf("swap.max = %v, want 0", sw)
	}
	if q, _ := r["cpu_quota"].(string); q != "50000" && !strings.HasPrefix(q, "50000 ") && differs["cpu_quota"] == "" {
		t.Errorf("cpu quota = %q, want 50000 (per 100000)", q)
	}
	if n, _ := r["forked"].(float64); (n < 5 || n >= 16) && d.Differs["forked"] == "" {
		t.Errorf("forked %v processes under a pids limit of 16", n)
	}
	if code, _ := exit(t, ct); code != 0 {
		t.Errorf("exit code %d, want 0 (stderr %q)", code, ct.Stderr())
	}
}

// SeccompProbe tries what the sandbox's seccomp profile denies and what a
// sandbox needs, and prints one line per probe.
const SeccompProbe = `
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

// seccomp runs the probe in a sandbox container of codebridge's own kind
// (its runner, over the sandbox's stream): new namespaces, mounts,
// keyrings, bpf, io_uring and ptrace are refused, and threads, processes,
// asyncio and the rest work.
//
// With Podman's default profile instead (/usr/share/containers/seccomp.json)
// the probe reports unshare-user (EINVAL: the runner has threads),
// clone-newuser (a child in a new user namespace), clone3-enosys, keyctl,
// io_uring_setup, ptrace and unshare-cli as ALLOWED.
func seccomp(t *testing.T, d Driver) {
	ct := start(t, d, confine.Spec{Command: python.Command(), Channel: python.ChannelEnv})
	res, err := python.Exec(t.Context(), ct.Stream(), python.Program{Code: SeccompProbe}, nil, time.Minute)
	if err != nil || res.Error != nil {
		t.Fatalf("probe: %v %+v\n%s", err, res, ct.Stderr())
	}
	CheckSeccomp(t, res.Stdout)
}

// CheckSeccomp checks the output of [SeccompProbe].
func CheckSeccomp(t testing.TB, out string) {
	t.Helper()
	probes := []string{"unshare-user", "unshare-mount", "setns", "mount", "ptrace", "unshare-cli"}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" { // called by syscall number
		probes = append(probes, "clone-newuser", "clone3-enosys", "keyctl", "bpf", "io_uring_setup", "userfaultfd")
	}
	if strings.Contains(out, "os-unshare ") {
		probes = append(probes, "os-unshare")
	}
	var allowed []string
	for _, name := range probes {
		if !strings.Contains(out, name+" denied\n") {
			allowed = append(allowed, name)
		}
	}
	if len(allowed) > 0 {
		t.Errorf("not denied: %v\n%s", allowed, out)
	}
	if want := "works thread sh mp fork7 asyncio poll mm sp tmp\n"; !strings.HasSuffix(out, want) {
		t.Errorf("usual workloads:\n%s\nwant a last line %q", out, want)
	}
}

// labels checks that a container carries the managed label and names this
// process as its owner, and that extra labels cannot override those.
func labels(t *testing.T, d Driver) {
	self := confine.Self()
	ct := start(t, d, confine.Spec{
		Command: python3("import time; time.sleep(600)"),
		Labels:  map[string]string{"io.codebridge.test": "yes", confine.LabelOwner: "someone/1", confine.LabelManaged: "no"},
	})
	list, err := d.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	l, ok := list[ct.ID()]
	if !ok {
		t.Fatalf("container %s not listed among the managed ones", ct.ID())
	}
	want := map[string]string{confine.LabelManaged: "true", confine.LabelOwner: self.ID(), "io.codebridge.test": "yes"}
	if self.Start != "" {
		want[confine.LabelOwnerStart] = self.Start
	}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q", k, l[k], v)
		}
	}
}

// goneWithStream checks that closing a container's stream ends it and the
// engine removes it, with no request from codebridge.
func goneWithStream(t *testing.T, d Driver) {
	for _, tt := range []struct{ name, channel string }{{"attach", ""}, {"socket", python.ChannelEnv}} {
		t.Run(tt.name, func(t *testing.T) {
			if why, ok := d.Differs["GoneWithStream/"+tt.name]; ok {
				t.Skipf("on %s: %s", d.Name, why)
			}
			new := d.New(t, Spec(confine.Spec{Command: python.Command(), Channel: tt.channel, Env: map[string]string{python.WaitLimitEnv: "600"}}))
			ct, err := new(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			res, err := python.Exec(t.Context(), ct.Stream(), python.Program{Code: "print(1)"}, nil, time.Minute)
			if err != nil || res.Stdout != "1\n" {
				t.Fatalf("run: %+v, %v", res, err)
			}
			ct.Stream().Close()
			waitGone(t, d, ct.ID())
			ct.Remove(t.Context())
		})
	}
}

// waitGone waits until the engine no longer lists the container.
func waitGone(t *testing.T, d Driver, id string) {
	t.Helper()
	testenv.Eventually(t, d.Name+" removes container "+id[:12], func() bool {
		list, err := d.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		_, ok := list[id]
		return !ok
	})
}

// childEnv makes the test binary act as a codebridge that warms a sandbox,
// reports what it started, and waits to be killed ([Child]).
const childEnv = "CODEBRIDGE_ENGINETEST_CHILD"

// childDirEnv names a folder the child may use as its state directory,
// removed by the test that started it.
const childDirEnv = "CODEBRIDGE_ENGINETEST_CHILD_DIR"

// Child, called first in a driver's TestMain, makes the test binary act as
// a codebridge for the suite's owner test when the suite started it so: it
// starts a container on an engine new makes (spec with the image set; dir a
// state directory), prints its ID and waits to be killed. It returns when
// the binary is not such a child.
func Child(new func(spec confine.Spec, dir string) Start) {
	img := os.Getenv(childEnv)
	if img == "" {
		return
	}
	ct, err := new(Spec(confine.Spec{
		Image:   img,
		Command: python.Command(),
		Env:     map[string]string{python.WaitLimitEnv: "600"}, // not what ends it
	}), os.Getenv(childDirEnv))(context.Background())
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ready", ct.ID())
	time.Sleep(time.Hour)
	os.Exit(0)
}

// goneWithOwner kills a codebridge with SIGKILL: its warm container must
// end with its stream and be removed by the engine, with no codebridge to
// remove it.
func goneWithOwner(t *testing.T, d Driver) {
	// The driver's TestMain calls [Child].
	child, f := testenv.Child(t, childEnv+"="+d.Image, childDirEnv+"="+t.TempDir())
	id := f[0]
	t.Cleanup(func() { d.Remove(context.Background(), id) })
	list, err := d.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if owner := list[id][confine.LabelOwner]; !strings.HasSuffix(owner, "/"+strconv.Itoa(child.Process.Pid)) {
		t.Errorf("the child's container is owned by %q, want the child (pid %d)", owner, child.Process.Pid)
	}
	child.Process.Kill()
	child.Wait()
	killed := time.Now()
	waitGone(t, d, id)
	t.Logf("the warm container was removed %v after its codebridge was killed", time.Since(killed).Round(time.Millisecond))
}

// sweep starts containers owned by a dead and a live process, by this one
// and by other hosts, and sweeps: only the dead owners' go.
func sweep(t *testing.T, d Driver) {
	// A process that has exited, and one that runs: stand-ins for a dead
	// and a live codebridge on this host. The dead one's start time is
	// recorded while it runs, as codebridge labels its containers, so that
	// its pid being reused meanwhile does not make it look alive.
	dead := exec.Command("sleep", "3600")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadStart, _ := confine.ProcessStart(dead.Process.Pid)
	dead.Process.Kill()
	dead.Wait()
	live := exec.Command("sleep", "3600")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	liveStart, _ := confine.ProcessStart(live.Process.Pid)

	// A host name of its own, so that the sweep, without its grace for
	// young containers, touches no other test's containers on this host.
	host := "codebridge-test-" + strconv.Itoa(os.Getpid())
	me := confine.Self()
	self := confine.Owner{Host: host, PID: me.PID, Start: me.Start}
	us := self.Labels()
	owners := map[string]map[string]string{
		"dead":            {confine.LabelOwner: confine.Owner{Host: host, PID: dead.Process.Pid}.ID(), confine.LabelOwnerStart: deadStart},
		"live":            {confine.LabelOwner: confine.Owner{Host: host, PID: live.Process.Pid}.ID(), confine.LabelOwnerStart: liveStart},
		"pid reused":      {confine.LabelOwner: confine.Owner{Host: host, PID: live.Process.Pid}.ID(), confine.LabelOwnerStart: "1"},
		"other host":      {confine.LabelOwner: confine.Owner{Host: "not-" + host, PID: dead.Process.Pid}.ID()},
		"us":              us,
		"us, earlier run": {confine.LabelOwner: us[confine.LabelOwner], confine.LabelOwnerStart: "1"},
	}
	wantGone := map[string]bool{"dead": true, "pid reused": true, "us, earlier run": true}
	if _, ok := confine.ProcessStart(live.Process.Pid); !ok {
		// Without /proc start times a reused pid looks alive.
		wantGone["pid reused"] = false
		wantGone["us, earlier run"] = false
	}
	ids := map[string]string{}
	for name, owner := range owners {
		id, err := d.StartOwned(t.Context(), Spec(confine.Spec{Image: d.Image, Command: python3("import time; time.sleep(600)")}), owner)
		if err != nil {
			t.Fatalf("starting the %s owner's container: %v", name, err)
		}
		t.Cleanup(func() { d.Remove(context.Background(), id) })
		ids[name] = id
	}
	n, err := d.Sweep(t.Context(), self)
	if err != nil {
		t.Fatal(err)
	}
	list, err := d.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for name, id := range ids {
		_, present := list[id]
		if present == wantGone[name] {
			t.Errorf("%s owner's container: present %v, want %v", name, present, !wantGone[name])
		}
		if !present {
			removed++
		}
	}
	if n != removed {
		t.Errorf("the sweep says it removed %d containers; %d are gone", n, removed)
	}
}
