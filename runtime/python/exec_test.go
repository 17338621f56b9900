package python

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// run drives the real bootstrap in a python3 subprocess, as a container would.
func run(t testing.TB, p Program, h Host) (*Result, error) {
	t.Helper()
	return runCtx(t, t.Context(), p, h)
}

func runCtx(t testing.TB, ctx context.Context, p Program, h Host) (*Result, error) {
	t.Helper()
	it := startInterp(t, protocol.Init{}, Limits{})
	defer it.Close()
	if h == nil {
		h = &fakeHost{}
	}
	return it.Run(ctx, p, h, time.Minute)
}

// startInterp starts an interpreter in a python3 subprocess.
func startInterp(t testing.TB, init protocol.Init, limits Limits) *Interpreter {
	t.Helper()
	it := Start(testenv.LocalPython(t, Command()), init, limits)
	t.Cleanup(func() { it.Close() })
	return it
}

func mustRun(t testing.TB, code string) *Result {
	t.Helper()
	res, err := run(t, Program{Code: code}, nil)
	if err != nil {
		t.Fatalf("Exec: %v (result %+v)", err, res)
	}
	return res
}

func TestCommand(t *testing.T) {
	argv := Command()
	if len(argv) != 5 || argv[0] != "python3" || argv[1] != "-I" || argv[2] != "-u" || argv[3] != "-c" {
		t.Fatalf("Command() = %q", argv[:4])
	}
}

func TestPlainCode(t *testing.T) {
	tests := []struct {
		name       string
		code       string
		stdout     string // exact, unless contains is set
		stderr     string // substring
		exitCode   int
		kind       protocol.FailureKind
		errType    string
		errMessage string   // substring
		traceback  []string // substrings
		notInTB    []string
	}{
		{name: "print", code: "print('hello')\nprint('wörld', 1+1)", stdout: "hello\nwörld 2\n"},
		{name: "empty", code: "", stdout: ""},
		{name: "stderr", code: "import sys\nprint('oops', file=sys.stderr)", stderr: "oops\n"},
		{
			name: "exception", code: "x = 1\ndef f():\n    return x / 0\nf()\n",
			exitCode: 1, kind: protocol.FailException, errType: "ZeroDivisionError", errMessage: "division by zero",
			traceback: []string{`File "<run_python #1>", line 4, in <module>`, "    f()", `line 3, in f`, "return x / 0", "ZeroDivisionError: division by zero"},
			notInTB:   []string{"codebridge", "asyncio"},
		},
		{
			name: "syntax error", code: "x = 1\ny = (2 +\n",
			exitCode: 1, kind: protocol.FailException, errType: "SyntaxError",
			traceback: []string{`File "<run_python #1>", line 2`, "y = (2 +", "SyntaxError"},
			notInTB:   []string{"codebridge"},
		},
		{
			name: "chained exception", code: "try:\n    {}['k']\nexcept KeyError as e:\n    raise ValueError('bad') from e\n",
			exitCode: 1, kind: protocol.FailException, errType: "ValueError", errMessage: "bad",
			traceback: []string{"KeyError: 'k'", "direct cause", "ValueError: bad", "raise ValueError('bad') from e"},
			notInTB:   []string{"codebridge"},
		},
		{name: "top-level await", code: "import asyncio\nawait asyncio.sleep(0.01)\nprint(await asyncio.gather(*(asyncio.sleep(0, r) for r in range(3))))", stdout: "[0, 1, 2]\n"},
		{
			name: "exception after await", code: "import asyncio\nawait asyncio.sleep(0)\nraise RuntimeError('late')\n",
			exitCode: 1, kind: protocol.FailException, errType: "RuntimeError", errMessage: "late",
			traceback: []string{`File "<run_python #1>", line 3`, "raise RuntimeError('late')"}, notInTB: []string{"asyncio", "codebridge"},
		},
		{
			name: "recursion", code: "def f(n):\n    return f(n + 1)\nf(0)",
			exitCode: 1, kind: protocol.FailException, errType: "RecursionError",
			traceback: []string{"Previous line repeated", "return f(n + 1)"},
		},
		{
			name: "str() of the exception fails", code: "class E(Exception):\n    def __str__(self):\n        raise ValueError()\nraise E()",
			exitCode: 1, kind: protocol.FailException, errType: "E", errMessage: "str() failed",
		},
		{
			name: "huge message is clipped", code: "raise ValueError('m' * 10_000_000)",
			exitCode: 1, kind: protocol.FailException, errType: "ValueError", errMessage: "characters cut]", traceback: []string{"characters cut]"},
		},
		{name: "sys.exit()", code: "import sys\nprint('a')\nsys.exit()", stdout: "a\n"},
		{name: "sys.exit(0)", code: "import sys\nsys.exit(0)"},
		{name: "sys.exit(3)", code: "import sys\nsys.exit(3)", exitCode: 3, kind: protocol.FailExit, errMessage: "exit status 3"},
		{name: "sys.exit(str)", code: "import sys\nsys.exit('goodbye')", exitCode: 1, kind: protocol.FailExit, stderr: "goodbye\n", errMessage: "exit status 1: goodbye"},
		{name: "exit in await", code: "import asyncio, sys\nawait asyncio.sleep(0)\nsys.exit(4)", exitCode: 4, kind: protocol.FailExit},
		{name: "sys.exit(True)", code: "import sys\nsys.exit(True)", exitCode: 1, kind: protocol.FailExit, errMessage: "exit status 1"},
		{name: "raise SystemExit(None)", code: "raise SystemExit(None)"},
		{
			name: "memory error", code: "raise MemoryError()", exitCode: 1, kind: protocol.FailOOM, errType: "MemoryError",
		},
		{name: "input gets EOF", code: "try:\n    input()\nexcept EOFError:\n    print('eof')\nimport sys\nprint(repr(sys.stdin.read()))", stdout: "eof\n''\n"},
		{name: "os.write", code: "import os\nos.write(1, b'raw\\n')\nos.write(2, b'err\\n')", stdout: "raw\n", stderr: "err\n"},
		{name: "os.system", code: "import os\nos.system('echo from-shell; echo shell-err >&2')", stdout: "from-shell\n", stderr: "shell-err\n"},
		{name: "subprocess", code: "import subprocess, sys\nsubprocess.run(['echo', 'child'])\nsubprocess.run([sys.executable, '-c', 'import sys; sys.stderr.write(\"c2\")'])", stdout: "child\n", stderr: "c2"},
		{name: "subprocess read stdin", code: "import subprocess\nprint(repr(subprocess.run(['cat'], capture_output=True).stdout))", stdout: "b''\n"},
		{name: "interleaved order", code: "import os\nprint('1')\nos.write(1, b'2\\n')\nos.system('echo 3')\nprint('4')", stdout: "1\n2\n3\n4\n"},
		{name: "frame bytes in output", code: "import sys\nsys.stdout.write('X\\x00\\x00\\x00\\x05hello')\nsys.stdout.flush()\nsys.stdout.buffer.write(b'Q\\xff\\xff\\xff\\xff')", stdout: "X\x00\x00\x00\x05helloQ\uFFFD"},
		{name: "fresh __main__", code: "import sys\nclass A: pass\nprint(__name__, A.__module__, sys.modules['__main__'].A is A)", stdout: "__main__ __main__ True\n"},
		{name: "print without newline at exit", code: "print('partial', end='')", stdout: "partial"},
		// Text is written a line at a time (one write, one frame for a
		// print); binary writes go at once, so a partial line comes after.
		{name: "text a line at a time", code: "import sys\nprint('a', end='')\nsys.stdout.buffer.write(b'b')\nprint('c')", stdout: "bac\n"},
		{name: "user thread still printing", code: "import threading, time\ndef spam():\n    while True:\n        print('x')\n        time.sleep(0.001)\nthreading.Thread(target=spam, daemon=True).start()\ntime.sleep(0.05)\nprint('end')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := mustRun(t, tt.code)
			if tt.name != "user thread still printing" && res.Stdout != tt.stdout {
				t.Errorf("stdout = %q, want %q", res.Stdout, tt.stdout)
			}
			if tt.name == "user thread still printing" && !strings.Contains(res.Stdout, "end") {
				t.Errorf("stdout = %q, want it to contain end", res.Stdout)
			}
			if !strings.Contains(res.Stderr, tt.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", res.Stderr, tt.stderr)
			}
			if res.ExitCode != tt.exitCode {
				t.Errorf("exit code = %d, want %d", res.ExitCode, tt.exitCode)
			}
			if tt.kind == "" {
				if res.Error != nil {
					t.Fatalf("error = %+v, want none", res.Error)
				}
				return
			}
			if res.Error == nil {
				t.Fatalf("error = nil, want kind %q", tt.kind)
			}
			f := res.Error
			if len(f.Message) > 100<<10 || len(f.Traceback) > 100<<10 {
				t.Errorf("failure text not bounded: message %d bytes, traceback %d bytes", len(f.Message), len(f.Traceback))
			}
			if f.Kind != tt.kind || (tt.errType != "" && f.Type != tt.errType) || !strings.Contains(f.Message, tt.errMessage) {
				t.Errorf("error = %+v, want kind %q type %q message containing %q", f, tt.kind, tt.errType, tt.errMessage)
			}
			for _, s := range tt.traceback {
				if !strings.Contains(f.Traceback, s) {
					t.Errorf("traceback lacks %q:\n%s", s, f.Traceback)
				}
			}
			for _, s := range tt.notInTB {
				if strings.Contains(f.Traceback, s) {
					t.Errorf("traceback contains %q:\n%s", s, f.Traceback)
				}
			}
		})
	}
}

func TestCtypesPrintf(t *testing.T) {
	res := mustRun(t, `
try:
    import ctypes, ctypes.util
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
except Exception as e:
    print("SKIP", e)
else:
    libc.printf(b"from C %d\n", 42)
    print("from Python")
`)
	if strings.HasPrefix(res.Stdout, "SKIP") {
		t.Skipf("ctypes unavailable: %s", res.Stdout)
	}
	// C stdio is block-buffered on a pipe, so its text arrives at exit, after Python's.
	for _, want := range []string{"from C 42\n", "from Python\n"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("stdout = %q, want it to contain %q", res.Stdout, want)
		}
	}
}

func TestOutputCap(t *testing.T) {
	t.Run("10 MB single line", func(t *testing.T) {
		start := time.Now()
		res := mustRun(t, "import sys\nsys.stdout.write('a' * (10 << 20))\nprint('b' * 10, file=sys.stderr)")
		t.Logf("10 MB line: %v", time.Since(start))
		if res.StdoutBytes != 10<<20 {
			t.Errorf("stdout bytes = %d, want %d", res.StdoutBytes, 10<<20)
		}
		want := strings.Repeat("a", DefaultOutputLimit) + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", DefaultOutputLimit, 10<<20)
		if res.Stdout != want {
			t.Errorf("stdout = %d bytes ending %q, want %d bytes", len(res.Stdout), res.Stdout[max(0, len(res.Stdout)-60):], len(want))
		}
		if !res.StdoutTruncated || res.StderrTruncated {
			t.Errorf("truncated = %v/%v, want true/false", res.StdoutTruncated, res.StderrTruncated)
		}
		if res.Stderr != strings.Repeat("b", 10)+"\n" || res.StderrBytes != 11 {
			t.Errorf("stderr = %q (%d bytes)", res.Stderr, res.StderrBytes)
		}
	})
	t.Run("custom limit cuts at a character boundary", func(t *testing.T) {
		res, err := run(t, Program{Code: "print('é' * 10, end='')", OutputLimit: 5}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := "éé\n[output truncated: 4 of 20 bytes shown]"
		if res.Stdout != want || res.StdoutBytes != 20 || !res.StdoutTruncated {
			t.Errorf("stdout = %q (%d bytes, truncated %v), want %q", res.Stdout, res.StdoutBytes, res.StdoutTruncated, want)
		}
	})
	t.Run("exactly at limit", func(t *testing.T) {
		res, err := run(t, Program{Code: "print('abcd', end='')", OutputLimit: 4}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stdout != "abcd" || res.StdoutTruncated {
			t.Errorf("stdout = %q truncated %v", res.Stdout, res.StdoutTruncated)
		}
	})
	t.Run("invalid UTF-8 is replaced (one U+FFFD per run)", func(t *testing.T) {
		res := mustRun(t, "import os\nos.write(1, b'ok\\xff\\xfe!')")
		if res.Stdout != "ok\uFFFD!" {
			t.Errorf("stdout = %q", res.Stdout)
		}
	})
}

// TestContextCancel: a client that cancels interrupts the code, whose
// session lives on. The cancel happens when the code says it has started (a
// request), not after a guessed delay.
func TestContextCancel(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{InterruptGrace: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	h := &fakeHost{handle: func(context.Context, string, json.RawMessage) (any, error) {
		cancel()
		return nil, nil
	}}
	res, err := it.Run(ctx, Program{Code: "x = 41\nprint('before', flush=True)\ncall_tool_sync('s', 'started')\nimport time\ntime.sleep(600)",
		Servers: testServers}, h, time.Hour)
	if err != nil || res.Error == nil || res.Error.Kind != protocol.FailTimeout || !strings.Contains(res.Error.Message, "cancelled") {
		t.Fatalf("Run = %+v, %v; want a cancelled run and a live interpreter", res.Error, err)
	}
	if res.Stdout != "before\n" {
		t.Errorf("stdout = %q, want before", res.Stdout)
	}
	res, err = it.Run(t.Context(), Program{Code: "print(x + 1)"}, nil, time.Minute)
	if err != nil || res.Stdout != "42\n" {
		t.Errorf("next run = %+v, %v; want 42 from the kept session", res, err)
	}
}

// TestBackgroundProcessHoldingPipe: a run ends while a process it started
// still holds its stdout; the next run finds that process still running, so
// the first did not wait for it.
func TestBackgroundProcessHoldingPipe(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{})
	res, err := it.Run(t.Context(), Program{Code: "import subprocess\np = subprocess.Popen(['sleep', '30'])\nprint('done')"}, nil, time.Minute)
	if err != nil || res.Stdout != "done\n" {
		t.Fatalf("run 1 = %+v, %v", res, err)
	}
	res, err = it.Run(t.Context(), Program{Code: "print(p.poll() is None)\np.kill()"}, nil, time.Minute)
	if err != nil || res.Stdout != "True\n" {
		t.Errorf("run 2 = %+v, %v; want the child still running", res, err)
	}
}

func TestSessionState(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{})
	steps := []struct{ code, want string }{
		{"x = 41\nimport json\ndef f(a):\n    \"\"\"Doubles.\"\"\"\n    return 2 * a\nopen('/tmp/kept', 'w').write('file')", ""},
		{"print(x + 1, json.dumps([f(2)]), open('/tmp/kept').read())", "42 [4] file\n"},
		{"import inspect\nprint(inspect.getsource(f).splitlines()[0])", "def f(a):\n"},
		{"raise ValueError('boom')", ""},
		{"print(x)", "41\n"},
		{"import sys\nsys.exit(3)", ""},
		{"print('alive after sys.exit')", "alive after sys.exit\n"},
	}
	for i, st := range steps {
		res, err := it.Run(t.Context(), Program{Code: st.code}, nil, time.Minute)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if res.Stdout != st.want {
			t.Errorf("run %d stdout = %q, want %q (error %+v)", i+1, res.Stdout, st.want, res.Error)
		}
	}
	if n := it.Runs(); n != len(steps) {
		t.Errorf("Runs = %d, want %d", n, len(steps))
	}
}

// TestTracebackNamesRun: each run's code has its own file name, so a
// function defined earlier shows where it came from.
func TestTracebackNamesRun(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{})
	it.Run(t.Context(), Program{Code: "def g():\n    return 1 / 0"}, nil, time.Minute)
	res, err := it.Run(t.Context(), Program{Code: "g()"}, nil, time.Minute)
	if err != nil || res.Error == nil {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	for _, want := range []string{`File "<run_python #2>", line 1`, `File "<run_python #1>", line 2, in g`, "ZeroDivisionError"} {
		if !strings.Contains(res.Error.Traceback, want) {
			t.Errorf("traceback lacks %q:\n%s", want, res.Error.Traceback)
		}
	}
}

// TestGVisorNote: under gVisor (GVisorEnv, set here by the code itself), a
// failure that comes from a system call gVisor lacks says so, in its message
// and its traceback, also when the ENOSYS error is the cause of another;
// other failures, and ENOSYS on Linux, get no note.
func TestGVisorNote(t *testing.T) {
	const note = "this sandbox runs under gVisor"
	for _, tt := range []struct {
		name, code string
		gvisor     bool
		want       bool
	}{
		{"enosys", "raise OSError(errno.ENOSYS, 'Function not implemented')", true, true},
		{"enosys as a cause", "try:\n    raise OSError(errno.ENOSYS, 'nope')\nexcept OSError as e:\n    raise RuntimeError('copy failed') from e", true, true},
		{"enosys during another", "try:\n    raise OSError(errno.ENOSYS, 'nope')\nexcept OSError:\n    1 / 0", true, true},
		{"other errno", "raise OSError(errno.EPERM, 'no')", true, false},
		{"enosys on Linux", "raise OSError(errno.ENOSYS, 'Function not implemented')", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code := fmt.Sprintf("import errno, codebridge_runner\ncodebridge_runner.GVISOR = %s\n%s", map[bool]string{true: "True", false: "False"}[tt.gvisor], tt.code)
			res, err := run(t, Program{Code: code}, nil)
			if err != nil || res.Error == nil {
				t.Fatalf("Run = %+v, %v; want a failure", res, err)
			}
			if got := strings.Contains(res.Error.Message, note) && strings.Contains(res.Error.Traceback, note); got != tt.want {
				t.Errorf("note in message and traceback: %v, want %v\nmessage: %s\ntraceback: %s", got, tt.want, res.Error.Message, res.Error.Traceback)
			}
		})
	}
}

func TestInterruptAtTimeLimit(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{InterruptGrace: time.Minute})
	if _, err := it.Run(t.Context(), Program{Code: "x = 1"}, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	res, err := it.Run(t.Context(), Program{Code: "import time\nwhile True: time.sleep(1)"}, nil, 100*time.Millisecond)
	if err != nil || res.Error == nil || res.Error.Kind != protocol.FailTimeout || !strings.Contains(res.Error.Message, "variables are kept") {
		t.Fatalf("Run = %+v, %v; want an interrupted run", res.Error, err)
	}
	res, err = it.Run(t.Context(), Program{Code: "print(x)"}, nil, time.Minute)
	if err != nil || res.Stdout != "1\n" {
		t.Errorf("next run = %+v, %v", res, err)
	}
}

func TestStuckCodeEndsInterpreter(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{InterruptGrace: 200 * time.Millisecond})
	// The code ignores SIGINT and then waits in a tool call; the run is
	// cancelled only once that call has reached the host, so the outcome does
	// not depend on how fast python3 starts.
	ignoring := make(chan struct{})
	h := &fakeHost{handle: func(ctx context.Context, method string, _ json.RawMessage) (any, error) {
		if method != "call_tool" {
			return nil, nil // the tool's docs: none, so the call goes unchecked
		}
		close(ignoring)
		<-ctx.Done() // ended when the interpreter is killed
		return nil, ctx.Err()
	}}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-ignoring
		cancel()
	}()
	code := "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nawait call_tool('s', 't')\nwhile True: pass"
	res, err := it.Run(ctx, Program{Code: code, Servers: []protocol.ServerInfo{{Name: "s", Alias: "s"}}}, h, time.Hour)
	if !errors.Is(err, context.Canceled) || res.Error == nil || res.Error.Kind != protocol.FailTimeout || !strings.Contains(res.Error.Message, "did not stop") {
		t.Fatalf("Run = %+v, %v; want a cancelled run that did not stop", res.Error, err)
	}
	select {
	case <-it.Done():
	default:
		t.Error("the interpreter is not done after code that did not stop")
	}
	if _, err := it.Run(t.Context(), Program{Code: "print(1)"}, nil, time.Minute); !errors.Is(err, ErrStuck) {
		t.Errorf("run after ErrStuck: %v, want ErrStuck", err)
	}
}

func TestLiveServers(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{})
	res, _ := it.Run(t.Context(), Program{Code: "print(discovered_servers(), 'mcp_a' in globals())", Servers: []protocol.ServerInfo{{Name: "a", Alias: "a"}}}, nil, time.Minute)
	if res.Stdout != "('a',) True\n" {
		t.Errorf("run 1 = %q", res.Stdout)
	}
	res, _ = it.Run(t.Context(), Program{Code: "print(discovered_servers(), 'mcp_a' in globals(), mcp_b.name, sorted(mcp_servers))", Servers: []protocol.ServerInfo{{Name: "b", Alias: "b"}}}, nil, time.Minute)
	if res.Stdout != "('b',) False b ['b']\n" {
		t.Errorf("run 2 = %q (%+v)", res.Stdout, res.Error)
	}
}

func TestPrelude(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{})
	res, err := it.Run(t.Context(), Program{Code: "import inspect\nprint(double(21), inspect.getdoc(double))", Prelude: []protocol.Source{
		{Name: "double", Source: "def double(x):\n    \"\"\"Twice x.\"\"\"\n    return 2 * x\n"},
		{Name: "broken", Source: "def broken(:\n"},
	}}, nil, time.Minute)
	if err != nil || res.Stdout != "42 Twice x.\n" {
		t.Errorf("Run = %+v, %v", res, err)
	}
	if !strings.Contains(res.Stderr, "saved helper 'broken' could not be defined") {
		t.Errorf("stderr = %q, want the broken helper named", res.Stderr)
	}
}

func TestNoExitFrame(t *testing.T) {
	res, err := run(t, Program{Code: "import os\nprint('bye', flush=True)\nimport time; time.sleep(0.1)\nos._exit(9)"}, nil)
	if !errors.Is(err, ErrNoExit) {
		t.Fatalf("err = %v, want ErrNoExit", err)
	}
	if res.Error != nil {
		t.Errorf("Result.Error = %+v, want nil", res.Error)
	}
	if res.Stdout != "bye\n" {
		t.Errorf("stdout = %q", res.Stdout)
	}
}

func TestBootstrapQuietOnEOF(t *testing.T) {
	py := testenv.Python(t)
	for _, tt := range []struct {
		name  string
		env   []string
		stdin bool // keep stdin open
	}{
		{name: "stdin closed"},
		{name: "wait limit", env: []string{WaitLimitEnv + "=0.2"}, stdin: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(py, Command()[1:]...)
			cmd.Env = tt.env
			if tt.stdin {
				w, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			}
			out, err := cmd.CombinedOutput()
			if err != nil || len(out) != 0 {
				t.Errorf("bootstrap = %v, output %q; want quiet exit 0", err, out)
			}
		})
	}
}

// fakeHost answers requests from a table of handlers.
type fakeHost struct {
	handle func(ctx context.Context, method string, params json.RawMessage) (any, error)
}

func (h *fakeHost) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if h.handle == nil {
		return nil, &protocol.Error{Code: "internal", Message: "no host in this test"}
	}
	return h.handle(ctx, method, params)
}

// BenchmarkSessionRun measures a run of print('ok') in a live interpreter:
// the run frame out, the output and exit frames back; back to back, and
// paced (100 ms between runs, not timed, as an agent's calls come), with
// p50/p95. Besides, per run: the CPU time of the sandbox's Python and of
// the host (this process), and how often each waited (voluntary context
// switches).
func BenchmarkSessionRun(b *testing.B) {
	b.Run("back-to-back", func(b *testing.B) { benchSessionRun(b, 0) })
	b.Run("paced", func(b *testing.B) { benchSessionRun(b, 100*time.Millisecond) })
}

// sandboxUsage is code that prints the CPU seconds and the waits of the
// sandbox's process since usageStart ran in the session.
const (
	usageStart = `import glob as _g, time as _t
def _waits():
    return sum(int(l.split()[1]) for f in _g.glob("/proc/self/task/*/status") for l in open(f) if l.startswith("voluntary_ctxt_switches:"))
_usage = (_t.process_time(), _waits())`
	sandboxUsage = `print(_t.process_time() - _usage[0], _waits() - _usage[1])`
)

func benchSessionRun(b *testing.B, pause time.Duration) {
	it := startInterp(b, protocol.Init{}, Limits{})
	if _, err := it.Run(b.Context(), Program{Code: usageStart}, nil, time.Minute); err != nil {
		b.Fatal(err) // the interpreter's start is not part of a run in a live session
	}
	cpu, waits := testenv.ProcessCPU(os.Getpid())
	var ds []time.Duration
	for b.Loop() {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
		}
		start := time.Now()
		res, err := it.Run(b.Context(), Program{Code: "print('ok')", Servers: testServers}, nil, time.Minute)
		ds = append(ds, time.Since(start))
		if err != nil || res.Stdout != "ok\n" {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	}
	cpu2, waits2 := testenv.ProcessCPU(os.Getpid())
	res, err := it.Run(b.Context(), Program{Code: sandboxUsage}, nil, time.Minute)
	var scpu, swaits float64
	if err != nil {
		b.Fatal(err)
	}
	if _, err := fmt.Sscan(res.Stdout, &scpu, &swaits); err != nil {
		b.Fatalf("output %q", res.Stdout)
	}
	n := float64(len(ds))
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(ds[min(len(ds)-1, len(ds)*95/100)].Microseconds()), "p95-us")
	b.ReportMetric(scpu*1e6/n, "sandbox-cpu-us/run")
	b.ReportMetric(swaits/n, "sandbox-waits/run")
	b.ReportMetric(float64((cpu2-cpu).Microseconds())/n, "host-cpu-us/run")
	b.ReportMetric(float64(waits2-waits)/n, "host-waits/run")
}

// countingHost answers every request after a short pause, recording the most
// requests it was serving at once.
type countingHost struct {
	mu        sync.Mutex
	now, peak int
	total     int // call_tool requests
}

func (h *countingHost) Call(ctx context.Context, method string, _ json.RawMessage) (any, error) {
	if method != "call_tool" {
		// The tool's docs, which the sandbox asks for once to check calls:
		// none, so calls go unchecked.
		return nil, nil
	}
	h.mu.Lock()
	h.now++
	h.total++
	h.peak = max(h.peak, h.now)
	h.mu.Unlock()
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
	}
	h.mu.Lock()
	h.now--
	h.mu.Unlock()
	return map[string]any{"content": []any{}, "structuredContent": "ok"}, nil
}

func TestRequestsBounded(t *testing.T) {
	h := &countingHost{}
	res, err := run(t, Program{Code: `
import asyncio
r = await asyncio.gather(*(call_tool("s", "t") for _ in range(200)))
print(len(r), set(r))
`, Servers: []protocol.ServerInfo{{Name: "s", Alias: "s"}}}, h)
	if err != nil || res.Error != nil {
		t.Fatalf("run: %v %+v", err, res.Error)
	}
	if res.Stdout != "200 {'ok'}\n" {
		t.Errorf("stdout = %q", res.Stdout)
	}
	if h.total != 200 || h.peak > MaxRequests || h.peak < 2 {
		t.Errorf("served %d requests, at most %d at once; want 200, concurrent but at most %d", h.total, h.peak, MaxRequests)
	}
	t.Logf("peak concurrency %d of %d allowed", h.peak, MaxRequests)
}

func TestSeconds(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{seconds(2 * time.Second), "2 seconds"},
		{seconds(time.Second), "1 second"},
		{seconds(1500 * time.Millisecond), "1.5 seconds"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// BenchmarkRequestRoundTrip is one request from sandboxed code answered by
// the host, over local pipes (no container): the protocol's and Python's
// share of a tool call's cost. Reported per call of 1,000 sequential
// awaited calls, and of 1,000 blocking (_sync) calls: the wall time
// (us/call), the CPU time of the sandbox's Python and of the host (this
// process), and how often each waited (voluntary context switches: a thread
// going to sleep and being woken), which vary less with the machine's load.
// The host answers at once, or, in await-slow-host, after 500 µs, as a
// real server's answer comes: then both sides wake cold on every call.
func BenchmarkRequestRoundTrip(b *testing.B) {
	for _, form := range []struct {
		name, call string
		delay      time.Duration
	}{
		{"await", `await call_tool("s", "t", {"message": "x"})`, 0},
		{"sync", `call_tool_sync("s", "t", {"message": "x"})`, 0},
		{"await-slow-host", `await call_tool("s", "t", {"message": "x"})`, 500 * time.Microsecond},
	} {
		h := &fakeHost{handle: func(context.Context, string, json.RawMessage) (any, error) {
			if form.delay > 0 {
				time.Sleep(form.delay)
			}
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": "x"}}}, nil
		}}
		b.Run(form.name, func(b *testing.B) {
			it := startInterp(b, protocol.Init{}, Limits{})
			code := testenv.PythonTimed(1000, form.call)
			var us, sandboxCPU, sandboxWaits, hostCPU, hostWaits []float64
			for b.Loop() {
				cpu, waits := testenv.ProcessCPU(os.Getpid())
				res, err := it.Run(b.Context(), Program{Code: code, Servers: testServers}, h, time.Minute)
				cpu2, waits2 := testenv.ProcessCPU(os.Getpid())
				if err != nil || res.Error != nil {
					b.Fatalf("Run = %+v, %v", res, err)
				}
				var wall, scpu, swaits float64
				if _, err := fmt.Sscan(res.Stdout, &wall, &scpu, &swaits); err != nil {
					b.Fatalf("output %q", res.Stdout)
				}
				us = append(us, wall)
				sandboxCPU = append(sandboxCPU, scpu)
				sandboxWaits = append(sandboxWaits, swaits)
				hostCPU = append(hostCPU, float64((cpu2-cpu).Microseconds())/1000)
				hostWaits = append(hostWaits, float64(waits2-waits)/1000)
			}
			for _, m := range []struct {
				v    []float64
				unit string
			}{{us, "us/call"}, {sandboxCPU, "sandbox-cpu-us/call"}, {sandboxWaits, "sandbox-waits/call"}, {hostCPU, "host-cpu-us/call"}, {hostWaits, "host-waits/call"}} {
				slices.Sort(m.v)
				b.ReportMetric(m.v[len(m.v)/2], m.unit)
			}
		})
	}
}

// TestPreload: the modules named in the start frame are imported in the
// background before the first run, a missing one is skipped quietly, and the
// run's namespace is not touched.
func TestPreload(t *testing.T) {
	it := startInterp(t, protocol.Init{Preload: []string{"colorsys", "no_such_module_here", "xml.dom.minidom"}}, Limits{})
	res, err := it.Run(t.Context(), Program{Code: `
import sys, threading
for t in threading.enumerate():
    if t.name == "codebridge-preload":
        t.join()
print("colorsys" in sys.modules, "xml.dom.minidom" in sys.modules, "colorsys" in globals())
`}, &fakeHost{}, time.Minute)
	if err != nil || res.Error != nil {
		t.Fatalf("run: %v %+v", err, res)
	}
	if res.Stdout != "True True False\n" || res.Stderr != "" {
		t.Errorf("stdout %q, stderr %q", res.Stdout, res.Stderr)
	}
}

// TestPreloadStillImporting: a run that ends while the preload thread is
// still importing matplotlib.pyplot leaves it alone; collecting the open
// figures used to touch the half-made module and print an error.
func TestPreloadStillImporting(t *testing.T) {
	files := maps.Clone(sandboxFiles)
	files["matplotlib/__init__.py"] = ""
	files["matplotlib/pyplot.py"] = `
import builtins, threading
builtins._pyplot_gate = threading.Event()
builtins._pyplot_gate.wait()
def get_fignums():
    return []
`
	it := startInterp(t, protocol.Init{Files: files, Preload: []string{"matplotlib.pyplot"}}, Limits{})
	first, err := it.Run(t.Context(), Program{Code: `
import builtins, sys, time
while not hasattr(builtins, "_pyplot_gate"):
    time.sleep(0.01)
print(sys.modules["matplotlib.pyplot"].__spec__._initializing)
`}, &fakeHost{}, time.Minute)
	if err != nil || first.Error != nil {
		t.Fatalf("first run: %v %+v", err, first)
	}
	if first.Stdout != "True\n" || first.Stderr != "" {
		t.Errorf("first run during the import: stdout %q, stderr %q", first.Stdout, first.Stderr)
	}
	second, err := it.Run(t.Context(), Program{Code: `
import builtins
builtins._pyplot_gate.set()
import matplotlib.pyplot as plt
print(plt.get_fignums())
`}, &fakeHost{}, time.Minute)
	if err != nil || second.Error != nil || second.Stdout != "[]\n" || second.Stderr != "" {
		t.Errorf("second run: %v %+v", err, second)
	}
}

// TestDrainWaitsForSlowPump: output written before a run ended is sent
// before the run's end, however long the pump that forwards it takes to be
// scheduled. The runner once gave its pumps half a second, and a loaded
// machine's print(1) came back empty. Here the pump's send is held for a
// second; drain, given the runner's own deadline, must return only once the
// bytes were sent.
func TestDrainWaitsForSlowPump(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "codebridge_runner.py"), []byte(mustRead("pyfiles/codebridge_runner.py")), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `
import os, sys, threading, time
import codebridge_runner as r

class Channel:
    def __init__(self):
        self.release = threading.Event()
        self.got = b""
    def send(self, kind, data):
        self.release.wait()
        self.got += data

ch = Channel()
rd, wr = os.pipe()
p = r.Pump(ch, b"O", rd)
p.start()
os.write(wr, b"1\n")
threading.Timer(1.0, ch.release.set).start()  # the pump gets its turn late
p.drain(time.monotonic() + r.DRAIN_LIMIT)
print(repr(ch.got))
`
	cmd := exec.Command(testenv.Python(t), "-c", script)
	cmd.Env = append(slices.Clone(testenv.PythonEnv), "PYTHONPATH="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "b'1\\n'" {
		t.Errorf("sent by the time drain returned: %s; want b'1\\n'", got)
	}
}
