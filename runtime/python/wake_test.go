package python

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// wakeEcho writes back each byte it reads, with no work in between. As
// "relay" it passes each byte on to an echo of its own and the answer back:
// a chain of four wake-ups, the shape of a run (client, codebridge, sandbox,
// codebridge, client).
const wakeEcho = `import os, subprocess, sys
if sys.argv[2:] == ["relay"]:
    p = subprocess.Popen([sys.executable, sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    to, back = p.stdin.fileno(), p.stdout.fileno()
while True:
    b = os.read(0, 64)
    if not b:
        break
    if sys.argv[2:] == ["relay"]:
        os.write(to, b)
        b = os.read(back, 64)
    os.write(1, b)
`

// BenchmarkWakeUp measures the floor under every latency figure of a run or a
// tool call on this machine: a byte sent over a pipe to a Python process that
// only writes it back, after a pause in which that process sleeps. In echo
// this process spins through the pause, so the figure is the round trip plus
// what waking the echo costs after sleeping that long; in chain it sleeps
// too, and the byte passes a relay first, as a paced run wakes four processes
// in turn. On the build machine, a VM, a process that slept more than about
// 100 µs costs tens of microseconds more to wake, and one that slept 200 ms
// hundreds (docs/performance.md): likely a halted processor woken through the
// host. That, not the work, can set the pace of a call or a paced run.
func BenchmarkWakeUp(b *testing.B) {
	script := filepath.Join(b.TempDir(), "echo.py")
	if err := os.WriteFile(script, []byte(wakeEcho), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		shape string
		pause time.Duration
	}{
		{"echo", 0}, {"echo", 100 * time.Microsecond}, {"echo", 300 * time.Microsecond},
		{"echo", time.Millisecond}, {"echo", 20 * time.Millisecond}, {"echo", 200 * time.Millisecond},
		{"chain", 0}, {"chain", 200 * time.Millisecond},
	} {
		b.Run(fmt.Sprintf("%s/pause=%v", c.shape, c.pause), func(b *testing.B) {
			argv := []string{"python3", script}
			if c.shape == "chain" {
				argv = append(argv, "relay") // killed at the end, it leaves its echo reading EOF
			}
			echo := testenv.LocalPython(b, argv)
			one := make([]byte, 1)
			roundTrip := func() {
				if _, err := echo.Write(one); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(echo, one); err != nil {
					b.Fatal(err)
				}
			}
			roundTrip() // the processes have started
			var ds []time.Duration
			// No StopTimer in the pause: it reads the runtime's statistics,
			// which wakes the other processor just before the byte is sent.
			for b.Loop() {
				if c.shape == "chain" {
					time.Sleep(c.pause)
				} else {
					for t0 := time.Now(); time.Since(t0) < c.pause; {
					}
				}
				start := time.Now()
				roundTrip()
				ds = append(ds, time.Since(start))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, "p50-us")
			b.ReportMetric(float64(ds[min(len(ds)-1, len(ds)*9/10)].Nanoseconds())/1e3, "p90-us")
		})
	}
}
