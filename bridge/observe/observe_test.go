package observe

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestTraceBounds(t *testing.T) {
	var tr Trace
	var wg sync.WaitGroup
	for i := range MaxTraceCalls + 7 {
		wg.Go(func() { tr.Add(Call{Server: "s", Tool: fmt.Sprint("t", i), Outcome: OutcomeOK}) })
	}
	wg.Wait()
	calls, more := tr.Calls()
	if len(calls) != MaxTraceCalls || more != 7 {
		t.Fatalf("got %d calls and %d more, want %d and 7", len(calls), more, MaxTraceCalls)
	}

	var long Trace
	long.Add(Call{Server: strings.Repeat("é", 200), Tool: strings.Repeat("x", 500)})
	calls, _ = long.Calls()
	for _, name := range []string{calls[0].Server, calls[0].Tool} {
		if len(name) > MaxTraceName || !utf8.ValidString(name) || !strings.HasSuffix(name, "…") {
			t.Errorf("name of %d bytes, valid %v, not cut to %d bytes ending in …: %q", len(name), utf8.ValidString(name), MaxTraceName, name)
		}
	}

	var nilTrace *Trace
	nilTrace.Add(Call{})
	if c, m := nilTrace.Calls(); c != nil || m != 0 {
		t.Errorf("a nil trace kept %v, %d", c, m)
	}
}

// TestCallJSON: the call trace in a result carries what the docs list, and
// nothing of the sink's fields.
func TestCallJSON(t *testing.T) {
	raw, err := json.Marshal(Call{Server: "fs", Tool: "read", MS: 1.5, Outcome: OutcomeOK, Session: "x", Run: 2, ResultBytes: 9})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `{"server":"fs","tool":"read","ms":1.5,"outcome":"ok"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

type countSink struct{ calls, runs int }

func (c *countSink) Call(Call) { c.calls++ }
func (c *countSink) Run(Run)   { c.runs++ }

func TestSinks(t *testing.T) {
	a, b := &countSink{}, &countSink{}
	s := Sinks{a, b}
	s.Call(Call{})
	s.Run(Run{})
	s.Call(Call{})
	if a.calls != 2 || b.calls != 2 || a.runs != 1 || b.runs != 1 {
		t.Errorf("a = %+v, b = %+v", a, b)
	}
}
