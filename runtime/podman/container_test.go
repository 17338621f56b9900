package podman

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

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
    r[k] = status[k].strip()
r["nofile"] = list(resource.getrlimit(resource.RLIMIT_NOFILE))
r["nproc"] = list(resource.getrlimit(resource.RLIMIT_NPROC))
r["home"] = os.environ.get("HOME")
r["dontwritebytecode"] = os.environ.get("PYTHONDONTWRITEBYTECODE")
r["extra_env"] = os.environ.get("CB_TEST")
r["cwd"] = os.getcwd()
r["pid1"] = first("/proc/1/comm")
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

func TestHardening(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	ct := startTest(t, c, confine.Spec{
		Image:   img,
		Command: []string{"python3", "-c", probe},
		Env:     map[string]string{"CB_TEST": "yes"},
		Memory:  96 << 20,
		Pids:    16,
		CPUs:    0.5,
	})
	if err := ct.Stdin().CloseWrite(); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(ct.Stdout())
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
		{"Seccomp", "2"}, // Podman's default seccomp filter
		{"nofile", []any{1024.0, 1024.0}},
		{"nproc", []any{16384.0, 16384.0}},
		{"home", "/tmp"},
		{"dontwritebytecode", "1"},
		{"extra_env", "yes"},
		{"cwd", "/work"},
		{"pid1", "podman-init"}, // catatonit, bind-mounted as /run/podman-init
		{"mem_limit", strconv.Itoa(96 << 20)},
		{"pids_max", "16"},
		{"fork_error", "errno 11"}, // EAGAIN from the pids cgroup
	}
	for _, ck := range checks {
		got, _ := json.Marshal(r[ck.key])
		want, _ := json.Marshal(ck.want)
		if !bytes.Equal(got, want) {
			t.Errorf("%s = %s, want %s", ck.key, got, want)
		}
	}
	// No swap: memory+swap equals memory (cgroup v1), or swap.max is 0 (v2).
	if sw := r["memsw_limit"]; sw != nil && sw != strconv.Itoa(96<<20) {
		t.Errorf("memsw_limit = %v, want %d", sw, 96<<20)
	}
	if sw := r["swap_max"]; sw != nil && sw != "0" {
		t.Errorf("swap.max = %v, want 0", sw)
	}
	if q, _ := r["cpu_quota"].(string); q != "50000" && !strings.HasPrefix(q, "50000 ") {
		t.Errorf("cpu quota = %q, want 50000 (per 100000)", q)
	}
	if n, _ := r["forked"].(float64); n < 5 || n >= 16 {
		t.Errorf("forked %v processes under a pids limit of 16", n)
	}
	if code := waitExit(t, ct); code != 0 {
		t.Errorf("exit code %d, want 0 (stderr %q)", code, ct.Stderr())
	}
}

func waitExit(t *testing.T, ct *Container) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	code, err := ct.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return code
}

func TestOOMKilled(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	ct := startTest(t, c, confine.Spec{
		Image:   img,
		Command: []string{"python3", "-c", "print('allocating', flush=True); b = b'x' * (256 << 20); print('survived')"},
		Memory:  64 << 20,
	})
	out, _ := io.ReadAll(ct.Stdout())
	if string(out) != "allocating\n" {
		t.Errorf("stdout %q, want only %q", out, "allocating\n")
	}
	if code := waitExit(t, ct); code != 137 {
		t.Errorf("exit code %d, want 137 (SIGKILL)", code)
	}
	// The container removes itself once it has exited; while it is still
	// there, Podman's own flag is worth a look.
	if st, err := ct.Inspect(t.Context()); err == nil {
		t.Logf("Inspect: %+v (Podman's own OOMKilled flag)", st)
	}
	if oom, err := ct.OOMKilled(t.Context()); err != nil || !oom {
		t.Errorf("OOMKilled = %v, %v; want true", oom, err)
	}
}

// TestLargeLine sends a 10 MB line without a newline inside it through
// stdout: no size or line limit anywhere in the attach path.
func TestLargeLine(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	const size = 10 << 20
	code := `
import hashlib, sys
line = bytes((i * 7 + 11) % 251 + 1 for i in range(` + strconv.Itoa(size) + `)).replace(b"\n", b"A")
sys.stdout.buffer.write(line + b"\n")
sys.stdout.buffer.flush()
sys.stderr.write(hashlib.sha256(line).hexdigest())
`
	ct := startTest(t, c, confine.Spec{Image: img, Command: []string{"python3", "-c", code}})
	br := bufio.NewReader(ct.Stdout())
	h := sha256.New()
	n, err := io.Copy(h, readLine{br})
	if err != nil {
		t.Fatal(err)
	}
	if n != size {
		t.Fatalf("line of %d bytes, want %d", n, size)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Errorf("%d bytes after the line", len(rest))
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), ct.Stderr(); got != want {
		t.Errorf("sha256 of the line %s, sandbox says %s", got, want)
	}
}

// readLine reads up to and excluding the first '\n'.
type readLine struct{ br *bufio.Reader }

func (r readLine) Read(p []byte) (int, error) {
	b, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		n := copy(p, b)
		// ReadSlice returned len(b) bytes but p may be shorter.
		if n < len(b) {
			panic("short buffer")
		}
		return n, nil
	}
	if err != nil {
		return 0, err
	}
	return copy(p, b[:len(b)-1]), io.EOF
}

func TestStdinRoundTrip(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	ct := startTest(t, c, confine.Spec{Image: img, Command: []string{"python3", "-c", "import sys; print('ready', flush=True); print(sys.stdin.read().upper())"}})
	br := bufio.NewReader(ct.Stdout())
	if l, err := br.ReadString('\n'); l != "ready\n" {
		t.Fatalf("first line %q, %v", l, err)
	}
	if _, err := io.WriteString(ct.Stdin(), "hello "); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(ct.Stdin(), "world"); err != nil {
		t.Fatal(err)
	}
	if err := ct.Stdin().CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "HELLO WORLD\n" {
		t.Errorf("after stdin: %q, %v", rest, err)
	}
	select {
	case <-ct.Done():
	case <-time.After(time.Minute): // a hang guard only
		t.Error("Done not closed a minute after the container's output ended")
	}
}

func TestKillRemove(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	ct, err := c.Start(t.Context(), confine.Spec{Image: img, Command: []string{"python3", "-c", "import time; time.sleep(600)"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ct.Remove(context.WithoutCancel(t.Context())) })
	if err := ct.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, ct); code != 137 {
		t.Errorf("exit code after Kill %d, want 137", code)
	}
	if oom, err := ct.OOMKilled(t.Context()); err != nil || oom {
		t.Errorf("OOMKilled after Kill = %v, %v; want false", oom, err)
	}
	if err := ct.Kill(t.Context()); err != nil {
		t.Errorf("Kill of a stopped container: %v", err)
	}
	if err := ct.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ct.Remove(t.Context()); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if err := c.remove(t.Context(), ct.ID); err != nil {
		t.Errorf("removing a container that is gone: %v", err)
	}
	list, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.ID == ct.ID {
			t.Errorf("container %s still listed after Remove: %+v", shortID(ct.ID), s)
		}
	}
	if _, err := ct.Inspect(t.Context()); !isStatus(err, 404) {
		t.Errorf("Inspect after Remove: %v, want 404", err)
	}
}

func TestStartBadImage(t *testing.T) {
	c := testClient(t)
	before, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Start(t.Context(), confine.Spec{Image: "localhost/codebridge-no-such-image:1", Command: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-image") {
		t.Fatalf("Start with a missing image: %v", err)
	}
	// With init, the runtime starts catatonit, which then fails to run the
	// program: Start succeeds and the container exits at once.
	img := testImage(t, c)
	ct := startTest(t, c, confine.Spec{Image: img, Command: []string{"/no/such/program"}})
	out, err := io.ReadAll(ct.Stdout())
	if len(out) != 0 || err != nil {
		t.Errorf("stdout %q, %v", out, err)
	}
	code := waitExit(t, ct)
	t.Logf("missing program: exit code %d, stderr %q", code, ct.Stderr())
	if code == 0 {
		t.Error("exit code 0 for a missing program")
	}
	if err := ct.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	after, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if countClient(after, c) > countClient(before, c) {
		t.Errorf("%d containers before, %d after failed Starts", countClient(before, c), countClient(after, c))
	}
}

func countClient(list []Summary, c *Client) int {
	n := 0
	for _, s := range list {
		if s.Labels[labelClient] == c.owner[labelClient] {
			n++
		}
	}
	return n
}

func TestRemoveStale(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)

	// A process that has exited, and one that runs: stand-ins for a dead and
	// a live codebridge on this host. The dead one's start time is recorded
	// while it runs, as codebridge labels its containers, so that its pid
	// being reused meanwhile (pid_max can be 32768) does not make it look
	// alive. The live one outlives the test, however slow.
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
	// running containers, touches no other test's containers on this host.
	host := "codebridge-test-" + strconv.Itoa(os.Getpid())
	self := confine.Owner{Host: host, PID: c.self.PID, Start: c.self.Start}
	us := self.Labels()
	sweeper := &Client{conn: c.conn, uri: c.uri, apiVersion: c.apiVersion, log: c.log, owner: us, self: self}
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
		other := &Client{conn: c.conn, uri: c.uri, apiVersion: c.apiVersion, log: c.log, owner: owner, self: self}
		ct := startTest(t, other, confine.Spec{Image: img, Command: []string{"python3", "-c", "import time; time.sleep(600)"}})
		ids[name] = ct.ID
	}
	n, err := sweeper.removeStale(t.Context(), 0) // without the grace for containers that end by themselves
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, s := range list {
		present[s.ID] = true
	}
	removed := 0
	for name, id := range ids {
		if present[id] == wantGone[name] {
			t.Errorf("%s owner's container: present %v, want %v", name, present[id], !wantGone[name])
		}
		if !present[id] {
			removed++
		}
	}
	if n != removed {
		t.Errorf("RemoveStale says it removed %d containers; %d are gone", n, removed)
	}
}

// TestNoOutputLost starts containers that write at once and exit: attaching
// before starting must catch every byte. (With Podman 4.3.1, attaching after
// start loses early output, and attaching to a container that has already
// exited hangs.)
func TestNoOutputLost(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	for i := range 5 {
		ct := startTest(t, c, confine.Spec{Image: img, Command: []string{"python3", "-c", "import sys; sys.stdout.write('x%d' % 1); sys.stderr.write('e')"}})
		out, err := io.ReadAll(ct.Stdout())
		if err != nil || string(out) != "x1" {
			t.Errorf("run %d: stdout %q, %v", i, out, err)
		}
		<-ct.Done()
		if ct.Stderr() != "e" {
			t.Errorf("run %d: stderr %q", i, ct.Stderr())
		}
	}
}
