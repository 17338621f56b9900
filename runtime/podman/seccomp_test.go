package podman

import (
	"runtime"
	"strings"
	"testing"
)

// seccompProbe tries what the profile denies and what a sandbox needs, and
// prints one line per probe.
const seccompProbe = `
import ctypes, errno, os, subprocess, threading, multiprocessing, asyncio, select, mmap, socket, tempfile, time
libc = ctypes.CDLL(None, use_errno=True)
def denied(name, rc):
    e = ctypes.get_errno()
    print(name, "denied" if rc == -1 and e == errno.EPERM else "ALLOWED rc=%d errno=%d" % (rc, e))
denied("unshare-user", libc.unshare(0x10000000))
denied("unshare-mount", libc.unshare(0x00020000))
denied("setns", libc.setns(os.open("/proc/self/ns/uts", os.O_RDONLY), 0))
denied("mount", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
denied("keyctl", libc.syscall(250, 0, 0, 0, 0, 0))   # keyctl(GET_KEYRING_ID) on x86_64
denied("bpf", libc.syscall(321, 0, 0, 0))
denied("io_uring_setup", libc.syscall(425, 1, 0))
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
ep = select.epoll(); ep.close(); select.poll(); out.append("poll")
m = mmap.mmap(-1, 4096); m[:2] = b"mm"; out.append(m[:2].decode())
s1, s2 = socket.socketpair(); s1.send(b"sp"); out.append(s2.recv(2).decode())
with tempfile.NamedTemporaryFile(dir="/tmp") as f: f.write(b"x"); out.append("tmp")
time.sleep(0.01)
print("works", " ".join(out))
`

// TestSeccompProfile runs the probe in a sandbox container with the engine's
// profile: new namespaces, mounts, keyrings, bpf and io_uring are refused, and
// threads, processes, asyncio and the rest work.
func TestSeccompProfile(t *testing.T) {
	e := newTestEngine(t, EngineOptions{})
	res, err := runOnce(t, e, seccompProbe)
	if err != nil || res.Error != nil {
		t.Fatalf("probe: %v %+v\n%s", err, res.Error, res.Stderr)
	}
	if e.profile == "" {
		t.Fatal("the engine used no seccomp profile with a local Podman")
	}
	probes := []string{"unshare-user", "unshare-mount", "setns", "mount", "unshare-cli"}
	if runtime.GOARCH == "amd64" { // the probe calls these by x86_64 syscall number
		probes = append(probes, "keyctl", "bpf", "io_uring_setup")
	}
	for _, name := range probes {
		if !strings.Contains(res.Stdout, name+" denied\n") {
			t.Errorf("%s not denied:\n%s", name, res.Stdout)
		}
	}
	if want := "works thread sh mp fork7 asyncio poll mm sp tmp\n"; !strings.HasSuffix(res.Stdout, want) {
		t.Errorf("usual workloads:\n%s\nwant a last line %q", res.Stdout, want)
	}
}
