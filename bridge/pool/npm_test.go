//go:build !windows

package pool

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Integration tests against the reference servers from npm, as users run them.

func npmDef(t testing.TB, name, bin string, args ...string) *discovery.Server {
	t.Helper()
	return &discovery.Server{Name: name, Transport: discovery.Stdio, Command: testenv.NPMBin(t, bin), Args: args}
}

func toolNames(tools []*mcp.Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

func TestNPMEverything(t *testing.T) {
	p := newTestPool(t, Options{})
	p.Update([]*discovery.Server{npmDef(t, "everything", "mcp-server-everything")})

	begin := time.Now()
	tools, err := p.Tools(t.Context(), "everything")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("start + initialize + tools/list of server-everything: %s", time.Since(begin))
	names := toolNames(tools)
	for _, want := range []string{"echo", "get-sum", "trigger-long-running-operation"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %q missing from %v", want, names)
		}
	}

	res, err := p.Call(t.Context(), "everything", "echo", map[string]any{"message": "hello"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "Echo: hello" {
		t.Errorf("echo: %q", got)
	}
	res, err = p.Call(t.Context(), "everything", "get-sum", map[string]any{"a": 2, "b": 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); !strings.Contains(got, "is 5") {
		t.Errorf("get-sum: %q", got)
	}

	// Two long operations at once, each seeing only its own progress. A
	// notification handled after its call's result is dropped, and this
	// server cannot wait for the test as the helper does
	// (TestProgressStdio), so only the first is required: it is sent a
	// second or more before the result.
	var wg sync.WaitGroup
	for _, steps := range []int{3, 5} {
		wg.Go(func() {
			var mu sync.Mutex
			var got []*mcp.ProgressNotificationParams
			res, err := p.Call(t.Context(), "everything", "trigger-long-running-operation",
				map[string]any{"duration": 2, "steps": steps}, func(n *mcp.ProgressNotificationParams) {
					mu.Lock()
					got = append(got, n)
					mu.Unlock()
				})
			if err != nil {
				t.Error(err)
				return
			}
			if text := resultText(t, res); !strings.Contains(text, "completed") {
				t.Errorf("long operation: %q", text)
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%d-step operation: %d progress notifications before the result", steps, len(got))
			if len(got) == 0 {
				t.Errorf("%d-step operation: no progress notification", steps)
			}
			for _, n := range got {
				if n.Total != float64(steps) || n.ProgressToken != got[0].ProgressToken {
					t.Errorf("%d-step operation got %+v", steps, n)
				}
			}
		})
	}
	wg.Wait()

	st := statusOf(t, p, "everything")
	if st.State != StateRunning || st.PID == 0 {
		t.Fatalf("status = %+v", st)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard only
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if alive(st.PID) {
		t.Errorf("server-everything (PID %d) still running after Close", st.PID)
	}
}

func TestNPMMemoryAndFilesystem(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	memory := npmDef(t, "memory", "mcp-server-memory")
	memory.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}
	p := newTestPool(t, Options{})
	p.Update([]*discovery.Server{memory, npmDef(t, "fs", "mcp-server-filesystem", dir)})

	tools, errs := p.AllTools(t.Context(), 2)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if !slices.Contains(toolNames(tools["memory"]), "create_entities") || !slices.Contains(toolNames(tools["fs"]), "read_text_file") {
		t.Fatalf("tools: memory %v, fs %v", toolNames(tools["memory"]), toolNames(tools["fs"]))
	}

	res, err := p.Call(t.Context(), "memory", "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "codebridge", "entityType": "project", "observations": []string{"written in Go"}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resultText(t, res)
	res, err = p.Call(t.Context(), "memory", "read_graph", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); !strings.Contains(got, "written in Go") {
		t.Errorf("read_graph: %q", got)
	}

	res, err = p.Call(t.Context(), "fs", "read_text_file", map[string]any{"path": filepath.Join(dir, "hello.txt")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "hello from a file" {
		t.Errorf("read_text_file: %q", got)
	}
	// Outside the allowed directory: a tool error, not a pool error.
	res, err = p.Call(t.Context(), "fs", "read_text_file", map[string]any{"path": "/etc/passwd"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Errorf("reading outside the allowed directory succeeded")
	}
}

// BenchmarkCallEcho measures a warm call through the pool to server-everything
// over stdio: 1,000 sequential echo calls per iteration; ns/op is per 1,000.
// Besides the wall time per call it reports, per call, this process's CPU
// time (cpu-us/call: the pool and go-sdk's client, not the server), how
// often its threads waited (waits/call, voluntary context switches) and the
// bytes it allocated (B/call): figures that vary less with the machine's
// load than the wall time.
func BenchmarkCallEcho(b *testing.B) {
	p := New(Options{})
	b.Cleanup(func() { _ = p.Close(context.WithoutCancel(b.Context())) })
	p.Update([]*discovery.Server{npmDef(b, "everything", "mcp-server-everything")})
	args := map[string]any{"message": "bench"}
	if _, err := p.Call(b.Context(), "everything", "echo", args, nil); err != nil {
		b.Fatal(err)
	}
	benchCalls(b, func() error {
		_, err := p.Call(b.Context(), "everything", "echo", args, nil)
		return err
	})
}

// BenchmarkCallEchoDirect is BenchmarkCallEcho on a bare go-sdk session, to
// show what the pool adds.
func BenchmarkCallEchoDirect(b *testing.B) {
	cmd := exec.Command(testenv.NPMBin(b, "mcp-server-everything"))
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	cs, err := client.Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bench"}}
	benchCalls(b, func() error {
		_, err := cs.CallTool(b.Context(), params)
		return err
	})
}

// benchCalls times call 1,000 times per iteration and reports the figures
// of BenchmarkCallEcho.
func benchCalls(b *testing.B, call func() error) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0, waits0 := testenv.ProcessCPU(os.Getpid())
	calls := 0
	for b.Loop() {
		for range 1000 {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		calls += 1000
	}
	cpu1, waits1 := testenv.ProcessCPU(os.Getpid())
	runtime.ReadMemStats(&m1)
	n := float64(calls)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/call")
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/n, "cpu-us/call")
	b.ReportMetric(float64(waits1-waits0)/n, "waits/call")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/call")
}

// BenchmarkStartEverything measures starting server-everything: spawn,
// initialize (ns/op), then stopping it.
func BenchmarkStartEverything(b *testing.B) {
	p := New(Options{})
	b.Cleanup(func() { _ = p.Close(context.WithoutCancel(b.Context())) })
	def := npmDef(b, "everything", "mcp-server-everything")
	for b.Loop() {
		c, err := p.dial(b.Context(), def)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		c.session.Close()
		b.StartTimer()
	}
}
