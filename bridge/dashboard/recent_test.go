package dashboard

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
)

func TestRecentRunsBounded(t *testing.T) {
	r := NewRecent(nil)
	var wg sync.WaitGroup
	for i := range MaxRecentRuns + 50 {
		wg.Go(func() { r.Call(observe.Call{Server: "s", Outcome: "ok"}) })
		r.Run(observe.Run{Session: "x", Run: i})
	}
	wg.Wait()
	runs := r.Runs()
	if len(runs) != MaxRecentRuns || runs[0].Run != MaxRecentRuns+49 || runs[len(runs)-1].Run != 50 {
		t.Errorf("%d runs kept, newest %d, oldest %d; want %d, %d, 50", len(runs), runs[0].Run, runs[len(runs)-1].Run, MaxRecentRuns, MaxRecentRuns+49)
	}
}

// TestRecentHour: calls count in their minute; a minute older than the
// hour is gone, also when its slot of the ring is not reused.
func TestRecentHour(t *testing.T) {
	now := time.Date(2026, 1, 2, 10, 30, 20, 0, time.UTC)
	r := NewRecent(func() time.Time { return now })
	call := func(server string, at time.Time, ms float64, outcome string) {
		r.Call(observe.Call{Server: server, Start: at, MS: ms, Outcome: outcome})
	}
	call("a", now, 10, "ok")
	call("a", now.Add(-5*time.Second), 30, "timeout")
	call("a", now.Add(-10*time.Minute), 5, "ok")
	call("b", now.Add(-2*time.Hour), 1, "ok")    // gone
	call("c", now.Add(-61*time.Minute), 1, "ok") // gone, though the minute before this one shares its slot
	hour := r.Hour()
	if len(hour) != 1 || hour[0].Server != "a" {
		t.Fatalf("servers of the last hour: %+v", hour)
	}
	ms := hour[0].Minutes
	if len(ms) != ChartMinutes || !ms[ChartMinutes-1].Start.Equal(now.Truncate(time.Minute)) {
		t.Fatalf("%d minutes ending %v", len(ms), ms[len(ms)-1].Start)
	}
	last := ms[ChartMinutes-1]
	if last.Calls != 2 || last.Errors != 1 || last.MS != 40 || last.MaxMS != 30 {
		t.Errorf("the current minute: %+v", last)
	}
	if m := ms[ChartMinutes-11]; m.Calls != 1 || m.MS != 5 {
		t.Errorf("ten minutes ago: %+v", m)
	}
	total := 0
	for _, m := range ms {
		total += m.Calls
	}
	if total != 3 {
		t.Errorf("%d calls in the hour, want 3", total)
	}
	if c := charts(hour, now); len(c) != 1 || c[0].Calls != 3 || c[0].Errors != 1 || len(c[0].Bars) != ChartMinutes || len(c[0].Dots) != 2 {
		t.Errorf("chart %+v", c)
	}
}

func TestFromAudit(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	recs := []audit.Record{
		{Time: t0, Session: "s", Run: 1, Server: "a", Tool: "x", DurationMS: 100, Outcome: "ok"},
		{Time: t0.Add(time.Second), Session: "s", Run: 1, Server: "a", Tool: "y", DurationMS: 500, Outcome: "tool_error"},
		{Time: t0.Add(time.Second), Server: "a", Tool: "y", Outcome: audit.OutcomeQuarantined, Kind: audit.KindPin},
		{Time: t0.Add(2 * time.Second), Session: "s", Run: 2, Server: "b", Tool: "z", DurationMS: 1, Outcome: "ok"},
	}
	r := FromAudit(recs, func() time.Time { return t0.Add(time.Minute) })
	runs := r.Runs()
	if len(runs) != 2 || runs[1].Run != 1 || len(runs[1].Calls) != 2 || runs[1].Duration != 1500*time.Millisecond || runs[0].Run != 2 {
		t.Fatalf("runs %+v", runs)
	}
	got := ""
	for _, s := range r.Hour() {
		n := 0
		for _, m := range s.Minutes {
			n += m.Calls
		}
		got += fmt.Sprintf("%s:%d ", s.Server, n)
	}
	if got != "a:2 b:1 " {
		t.Errorf("calls by server: %q", got)
	}
}

// TestRecentServersBounded: code that calls many unknown servers (whose
// names it chooses) grows no map past MaxChartServers; servers idle for an
// hour make room.
func TestRecentServersBounded(t *testing.T) {
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	r := NewRecent(func() time.Time { return now })
	for i := range MaxChartServers + 50 {
		r.Call(observe.Call{Server: fmt.Sprint("s", i), Start: now, Outcome: "ok"})
	}
	hour := r.Hour()
	if len(hour) != MaxChartServers+1 || hour[0].Server != OtherServers {
		t.Fatalf("%d series, first %q; want %d, %q first", len(hour), hour[0].Server, MaxChartServers+1, OtherServers)
	}
	if n := hour[0].Minutes[ChartMinutes-1].Calls; n != 50 {
		t.Errorf("%d calls counted as other servers, want 50", n)
	}
	now = now.Add(2 * time.Hour)
	r.Call(observe.Call{Server: "fresh", Start: now, Outcome: "ok"})
	if hour := r.Hour(); len(hour) != 1 || hour[0].Server != "fresh" {
		t.Errorf("after an idle hour: %+v", hour)
	}
}
