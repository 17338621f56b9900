package dashboard

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
)

// Bounds of [Recent]: the runs it keeps, and the minutes of calls it
// counts per server.
const (
	MaxRecentRuns   = 200
	ChartMinutes    = 60
	MaxChartServers = 100
	OtherServers    = "(other servers)" // where the calls of servers past MaxChartServers count
)

// Recent is an [observe.Sink] that keeps the last [MaxRecentRuns] runs and,
// for each server, its calls and their latency per minute over the last
// [ChartMinutes] minutes. Its memory is bounded by those: a server name
// comes from the code when the server is unknown, so past
// [MaxChartServers] servers with calls in the last hour the calls of a
// new one count as [OtherServers].
type Recent struct {
	now func() time.Time

	mu      sync.Mutex // protects following
	runs    []observe.Run
	next    int // where the next run goes in runs, once it is full
	minutes map[string]*[ChartMinutes]Minute
}

// Minute is one server's calls in one minute.
type Minute struct {
	Start  time.Time // the minute's start; zero for a minute without calls
	Calls  int
	Errors int     // calls whose outcome is not ok
	MS     float64 // their summed latency
	MaxMS  float64
}

// NewRecent returns an empty [Recent]; now is its clock (nil: time.Now).
func NewRecent(now func() time.Time) *Recent {
	if now == nil {
		now = time.Now
	}
	return &Recent{now: now, minutes: map[string]*[ChartMinutes]Minute{}}
}

// Call implements [observe.Sink].
func (r *Recent) Call(c observe.Call) {
	at := c.Start
	if at.IsZero() {
		at = r.now()
	}
	minute := at.Truncate(time.Minute)
	r.mu.Lock()
	defer r.mu.Unlock()
	ring := r.minutes[c.Server]
	if ring == nil {
		name := c.Server
		if len(r.minutes) >= MaxChartServers {
			r.dropIdle()
		}
		if len(r.minutes) >= MaxChartServers {
			name = OtherServers
		}
		if ring = r.minutes[name]; ring == nil {
			ring = new([ChartMinutes]Minute)
			r.minutes[name] = ring
		}
	}
	m := &ring[minute.Unix()/60%ChartMinutes]
	if !m.Start.Equal(minute) {
		*m = Minute{Start: minute}
	}
	m.Calls++
	if c.Outcome != observe.OutcomeOK {
		m.Errors++
	}
	m.MS += c.MS
	m.MaxMS = max(m.MaxMS, c.MS)
}

// dropIdle forgets the servers without a call in the last hour.
func (r *Recent) dropIdle() {
	first := r.now().Truncate(time.Minute).Add(-(ChartMinutes - 1) * time.Minute)
	for server, ring := range r.minutes {
		if !slices.ContainsFunc(ring[:], func(m Minute) bool { return !m.Start.Before(first) }) {
			delete(r.minutes, server)
		}
	}
}

// Run implements [observe.Sink].
func (r *Recent) Run(run observe.Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.runs) < MaxRecentRuns {
		r.runs = append(r.runs, run)
		return
	}
	r.runs[r.next] = run
	r.next = (r.next + 1) % MaxRecentRuns
}

// Runs returns the runs kept, newest first.
func (r *Recent) Runs() []observe.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]observe.Run, 0, len(r.runs))
	out = append(out, r.runs[r.next:]...)
	out = append(out, r.runs[:r.next]...)
	slices.Reverse(out)
	return out
}

// Series is one server's minutes of the last hour, oldest first: one
// entry per minute, ChartMinutes of them, ending with the current one.
type Series struct {
	Server  string
	Minutes []Minute
}

// Hour returns each server's minutes of the last hour, by server name;
// servers without a call in it are left out.
func (r *Recent) Hour() []Series {
	end := r.now().Truncate(time.Minute)
	first := end.Add(-(ChartMinutes - 1) * time.Minute)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Series
	for server, ring := range r.minutes {
		s := Series{Server: server, Minutes: make([]Minute, ChartMinutes)}
		any := false
		for i := range ChartMinutes {
			at := first.Add(time.Duration(i) * time.Minute)
			m := ring[at.Unix()/60%ChartMinutes]
			if m.Start.Equal(at) {
				s.Minutes[i] = m
				any = true
			} else {
				s.Minutes[i] = Minute{Start: at}
			}
		}
		if any {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Series) int { return cmp.Compare(a.Server, b.Server) })
	return out
}

// FromAudit is a [Recent] filled from audit records (oldest first), for a
// dashboard in a process of its own, which sees no runs as they end: each
// tool call is counted, and the calls of one session's run make one run,
// whose start is its first call's and whose end its last's.
func FromAudit(recs []audit.Record, now func() time.Time) *Recent {
	r := NewRecent(now)
	type key struct {
		session string
		run     int
	}
	var order []key
	runs := map[key]*observe.Run{}
	for _, rec := range recs {
		if rec.Session == "" || (rec.Kind != "" && rec.Kind != audit.KindResource && rec.Kind != audit.KindPrompt) {
			continue // pins, sign-ins and saves are no calls of a run
		}
		c := observe.Call{Kind: rec.Kind, Server: rec.Server, Tool: rec.Tool, MS: rec.DurationMS, Outcome: rec.Outcome,
			Start: rec.Time, Session: rec.Session, Run: rec.Run, ResultBytes: rec.ResultBytes}
		r.Call(c)
		k := key{rec.Session, rec.Run}
		run := runs[k]
		if run == nil {
			run = &observe.Run{Session: rec.Session, Run: rec.Run, Start: rec.Time, Outcome: "(from the audit log)"}
			runs[k] = run
			order = append(order, k)
		}
		if len(run.Calls) < observe.MaxTraceCalls {
			run.Calls = append(run.Calls, c)
		} else {
			run.CallsMore++
		}
		end := rec.Time.Add(time.Duration(rec.DurationMS * float64(time.Millisecond)))
		run.Duration = max(run.Duration, end.Sub(run.Start))
	}
	for _, k := range order[max(0, len(order)-MaxRecentRuns):] {
		r.Run(*runs[k])
	}
	return r
}
