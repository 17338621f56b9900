package podman

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// massExitEnv sets how many sandbox containers BenchmarkMassExit starts and
// ends at once (default 50).
const massExitEnv = "CODEBRIDGE_BENCH_EXIT"

// BenchmarkMassExit: a codebridge holding many sandboxes ends them all at
// once, as a serve --http shutting down or killed does. With Podman 4.3,
// conmon runs one 'podman container cleanup' process per container that
// exits; it reports the most of those alive at once, the machine's load, and
// how long until every container is gone.
func BenchmarkMassExit(b *testing.B) {
	c := testClient(b)
	img := testImage(b, c)
	n, err := strconv.Atoi(cmp.Or(os.Getenv(massExitEnv), "50"))
	if err != nil || n < 1 {
		b.Fatalf("%s: want a count", massExitEnv)
	}
	exitDelay := python.ExitDelayEnv
	if os.Getenv("CODEBRIDGE_BENCH_EXIT_AT_ONCE") != "" {
		exitDelay = ""
	}
	for b.Loop() {
		b.StopTimer()
		e := NewEngine(EngineOptions{StateDir: b.TempDir(), Image: img, Logger: testenv.Logger(), Spec: confine.Spec{
			Command: python.Command(),
			Env:     map[string]string{python.WaitLimitEnv: "600"},
			Channel: python.ChannelEnv,
		}, ExitDelay: exitDelay})
		var g errgroup.Group
		g.SetLimit(4)
		var mu sync.Mutex
		var ids []string
		for range n {
			g.Go(func() error {
				box, err := e.Start(b.Context(), sandbox.Wait{})
				if err != nil {
					return err
				}
				<-boxCt(box).Ready() // the sandbox has connected to its socket
				mu.Lock()
				ids = append(ids, box.ID())
				mu.Unlock()
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			e.Close(context.Background())
			b.Fatal(err)
		}
		label := e.client().owner[labelClient]
		load0 := readLoad()
		b.StartTimer()

		// Removals are counted from Podman's events, which take no lock:
		// listing containers waits for the cleanups' locks.
		removed := watchRemovals(b, c, label)
		start := time.Now()
		s := sampleWhile(func() { e.Close(context.Background()) }, func() bool { return removed() >= n })
		b.StopTimer()
		if list, err := c.List(b.Context()); err != nil {
			b.Fatal(err)
		} else {
			for _, sm := range list {
				if sm.Labels[labelClient] == label {
					b.Fatalf("container %s is still there (%s)", enginekit.ShortID(sm.ID), sm.State)
				}
			}
		}
		b.Logf("%d containers: close %v, all gone %v; cleanup processes at most %d (podman processes %d); runnable at most %d, threads at most %d; load %.2f before, %.2f at most",
			n, s.closed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), s.cleanups, s.podmans, s.running, s.threads, load0.avg1, s.load1)
		b.Logf("each second, sandboxes alive/cleanup processes/runnable: %s", strings.Join(s.series, " "))
		b.ReportMetric(time.Since(start).Seconds(), "s-to-gone")
		b.ReportMetric(float64(s.cleanups), "max-cleanups")
		b.ReportMetric(float64(s.running), "max-runnable")
		b.ReportMetric(s.load1, "max-load1")
		b.StartTimer()
	}
}

// watchRemovals follows Podman's "remove" events of the containers whose
// client label is label; the function it returns counts them so far.
func watchRemovals(b *testing.B, c *Client, label string) func() int {
	filters, _ := json.Marshal(map[string][]string{"label": {labelClient + "=" + label}, "event": {"remove"}})
	resp, err := c.api().Request(b.Context(), http.MethodGet, "/events", url.Values{"stream": {"true"}, "filters": {string(filters)}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	go func() {
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev struct{}
			if dec.Decode(&ev) != nil {
				return
			}
			n.Add(1)
		}
	}()
	b.Cleanup(func() { resp.Body.Close() })
	return func() int { return int(n.Load()) }
}

// exitSample is the worst seen while containers exit.
type exitSample struct {
	series   []string      // once a second: seconds, sandboxes alive, cleanups, runnable
	closed   time.Duration // how long close took
	cleanups int           // 'podman container cleanup' processes alive at once
	podmans  int           // podman processes alive at once
	running  int           // runnable tasks (/proc/loadavg)
	threads  int           // tasks in all
	load1    float64       // 1-minute load average
}

// sampleWhile runs end, then samples the machine every 100 ms until gone
// reports true.
func sampleWhile(end func(), gone func() bool) exitSample {
	var s exitSample
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		t0 := time.Now()
		for i := 0; ; i++ {
			cl, pm, sb := countPodman()
			l := readLoad()
			s.cleanups, s.podmans = max(s.cleanups, cl), max(s.podmans, pm)
			s.running, s.threads, s.load1 = max(s.running, l.running), max(s.threads, l.threads), max(s.load1, l.avg1)
			if i%10 == 0 {
				s.series = append(s.series, fmt.Sprintf("%.0fs:%d/%d/%d", time.Since(t0).Seconds(), sb, cl, l.running))
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	t0 := time.Now()
	end()
	s.closed = time.Since(t0)
	for !gone() {
		time.Sleep(100 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	return s
}

type loadAvg struct {
	avg1             float64
	running, threads int
}

func readLoad() loadAvg {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	var l loadAvg
	if len(f) >= 4 {
		l.avg1, _ = strconv.ParseFloat(f[0], 64)
		r, t, _ := strings.Cut(f[3], "/")
		l.running, _ = strconv.Atoi(r)
		l.threads, _ = strconv.Atoi(t)
	}
	return l
}

// countPodman counts the podman processes on the machine, among them those
// running 'container cleanup', and the sandboxes' bootstrap processes.
func countPodman() (cleanups, all, sandboxes int) {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range dirs {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		if bytes.HasPrefix(data, []byte("python3\x00-I\x00-u\x00-c\x00# codebridge bootstrap")) {
			sandboxes++
			continue
		}
		argv0, _, _ := bytes.Cut(data, []byte{0})
		if filepath.Base(string(argv0)) != "podman" {
			continue
		}
		all++
		if bytes.Contains(data, []byte("\x00cleanup\x00")) {
			cleanups++
		}
	}
	return cleanups, all, sandboxes
}
