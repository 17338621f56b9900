// Package testenv finds the real things integration tests need: a Podman API,
// the sandbox image, and MCP servers installed from npm by scripts/test.sh.
//
// On a developer machine a missing piece skips the test with the command that
// provides it. With CI=true a missing piece fails the test: CI must exercise
// everything.
//
// It also holds what several packages' tests do alike: waiting for a
// condition ([Eventually]), a local interpreter ([LocalPython]), the test
// binary started again as a process to kill ([Child]), a test logger.
package testenv

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Sandbox images codebridge setup builds.
const (
	// DefaultImage is the data image (python3 with numpy, pandas, matplotlib...).
	DefaultImage = "localhost/codebridge-sandbox:latest"
	// DefaultMinimalImage is the minimal image (python3 only), built with
	// CODEBRIDGE_IMAGE_VARIANT=minimal.
	DefaultMinimalImage = "localhost/codebridge-sandbox:minimal"
)

// InCI reports whether the tests run in CI, where nothing may be skipped.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing skips t, or fails it in CI, because what the test needs is absent.
func Missing(t testing.TB, what, fix string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s is missing (CI=true, so this is a failure): %s", what, fix)
	}
	t.Skipf("%s is missing: %s", what, fix)
}

// Image returns the sandbox image tests use: $MCP_BRIDGE_IMAGE or [DefaultImage].
func Image() string {
	if img := os.Getenv("MCP_BRIDGE_IMAGE"); img != "" {
		return img
	}
	return DefaultImage
}

// Runtime returns the OCI runtime sandboxes run under in tests:
// $MCP_BRIDGE_RUNTIME ("runsc" in scripts/test.sh's gVisor phase), or ""
// for the engine's default.
func Runtime() string { return os.Getenv("MCP_BRIDGE_RUNTIME") }

// MinimalImage returns the minimal sandbox image (python3 and its standard
// library only) that tests check codebridge still works with:
// $CODEBRIDGE_TEST_MINIMAL_IMAGE, set by scripts/test.sh, or [DefaultMinimalImage].
func MinimalImage() string {
	if img := os.Getenv("CODEBRIDGE_TEST_MINIMAL_IMAGE"); img != "" {
		return img
	}
	return DefaultMinimalImage
}

// RequirePodmanBinary returns the path of the podman CLI, or skips/fails t.
func RequirePodmanBinary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("podman")
	if err != nil {
		Missing(t, "podman", "run scripts/setup.sh")
	}
	return p
}

// NPMDir is where scripts/test.sh installs the pinned npm trees of
// scripts/npm: the MCP servers in servers/ and the clients in clients/. It is
// $CODEBRIDGE_TEST_NPM_DIR, which test.sh sets to a folder named by the
// lockfiles' hash.
func NPMDir() string {
	return os.Getenv("CODEBRIDGE_TEST_NPM_DIR")
}

// npmTrees are the trees of scripts/npm, searched in this order.
var npmTrees = []string{"servers", "clients"}

// NPMBin returns the path of an executable installed in one of the npm trees
// (e.g. "mcp-server-everything"), or skips/fails t.
func NPMBin(t testing.TB, name string) string {
	t.Helper()
	return npmPath(t, "npm package providing "+name, filepath.Join("node_modules", ".bin", name))
}

// NPMModule returns the directory of an npm package installed in one of the
// npm trees (e.g. "@modelcontextprotocol/sdk"), or skips/fails t.
func NPMModule(t testing.TB, pkg string) string {
	t.Helper()
	return npmPath(t, "npm package "+pkg, filepath.Join("node_modules", filepath.FromSlash(pkg)))
}

// NPMClients is the folder of the clients' tree, for Node scripts that
// require the TypeScript SDK from it.
func NPMClients(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(NPMDir(), "clients")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); NPMDir() == "" || err != nil {
		Missing(t, "the clients' npm tree", "run scripts/test.sh, which installs the pinned npm trees of scripts/npm and sets CODEBRIDGE_TEST_NPM_DIR")
	}
	return dir
}

func npmPath(t testing.TB, what, rel string) string {
	t.Helper()
	if dir := NPMDir(); dir != "" {
		for _, tree := range npmTrees {
			p := filepath.Join(dir, tree, rel)
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	Missing(t, what, "run scripts/test.sh, which installs the pinned npm trees of scripts/npm and sets CODEBRIDGE_TEST_NPM_DIR")
	panic("unreachable")
}

// Python returns the python3 that tests run the sandbox's code with on this
// host: $CODEBRIDGE_TEST_PYTHON if set (to try other versions: the sandbox
// code must run on 3.9 and later), else python3 on PATH, whichever that is (a
// pyenv shim starts 0.1 s slower than Debian's; scripts/fresh.sh puts a
// slower one first), so no test may depend on how fast it starts.
func Python(t testing.TB) string {
	t.Helper()
	name := cmp.Or(os.Getenv("CODEBRIDGE_TEST_PYTHON"), "python3")
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, "install Python 3.9 or newer: these tests run the sandbox's Python on the host")
	}
	return p
}

// PythonEnv is the environment of a sandbox's Python run on this host.
var PythonEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}

// LocalPython runs argv (the sandbox's command, whose argv[0] is python3) as
// a process on this host with [Python] and returns its stdin and stdout as
// one stream, for tests of the sandbox protocol without Podman. What it
// writes to stderr is logged when t ends; the process is killed when the
// stream is closed or t ends.
func LocalPython(t testing.TB, argv []string) io.ReadWriteCloser {
	t.Helper()
	cmd := exec.Command(Python(t), argv[1:]...)
	cmd.Env = PythonEnv
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &localStream{Reader: stdout, in: stdin, cmd: cmd}
	t.Cleanup(func() {
		s.Close()
		cmd.Wait()
		if out := stderr.String(); out != "" {
			t.Logf("python3 stderr outside the protocol: %s", out)
		}
	})
	return s
}

type localStream struct {
	io.Reader
	in  io.WriteCloser
	cmd *exec.Cmd
}

func (s *localStream) Write(p []byte) (int, error) { return s.in.Write(p) }

func (s *localStream) Close() error {
	s.in.Close()
	return s.cmd.Process.Kill()
}

// Eventually waits until cond, which other goroutines or processes make true,
// holds, checking every 10 ms. Use it only where no event can be waited for;
// its 30 s limit only stops a broken run from hanging, it asserts nothing
// about speed.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after 30 s until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitFlockBlocked waits until some process or goroutine is blocked waiting
// for an flock on the file at path, as Linux's /proc/locks shows (a "->"
// line naming the file's inode). It reports false where /proc/locks does not
// exist, so the caller can skip the check that depends on it.
func WaitFlockBlocked(t testing.TB, path string) bool {
	t.Helper()
	if _, err := os.Stat("/proc/locks"); err != nil {
		return false
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino, ok := inode(fi)
	if !ok {
		return false
	}
	suffix := ":" + strconv.FormatUint(ino, 10)
	Eventually(t, "a waiter is blocked on the flock of "+path, func() bool {
		b, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			// "2: -> FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF"
			if len(f) >= 7 && f[1] == "->" && f[2] == "FLOCK" && strings.HasSuffix(f[6], suffix) {
				return true
			}
		}
		return false
	})
	return true
}

// Child starts this test binary again, running no test, with env added: a
// process a test can kill (as SIGKILL kills a codebridge), whose TestMain
// sees env, does its part and prints "ready" and what it made on one line.
// Child returns the child and the fields of that line after "ready"; the
// child is killed when the test ends.
func Child(t testing.TB, env ...string) (*exec.Cmd, []string) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), env...)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) < 2 || f[0] != "ready" {
		t.Fatalf("the child process said %q, %v; want a line \"ready ...\" (does its TestMain act on %q?)", line, err, env)
	}
	return child, f[1:]
}

// Logger is a logger for tests: debug lines on stderr with -test.v, else
// none.
func Logger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// StoreImage returns the sandbox image ([Image]) when the engine's store
// has it, as exists (a driver's API client, not the CLI as in
// [RequireImage]) says, else skips t (fails it in CI) with fix.
func StoreImage(t testing.TB, engine string, exists func(ctx context.Context, image string) (bool, error), fix string) string {
	t.Helper()
	img := Image()
	ok, err := exists(t.Context(), img)
	if err != nil {
		t.Fatalf("checking image %s in %s: %v", img, engine, err)
	}
	if !ok {
		Missing(t, "image "+img+" in "+engine, fix)
	}
	return img
}
