package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery/search/searcheval"
)

func TestPercentiles(t *testing.T) {
	var took []time.Duration
	for i := 100; i >= 1; i-- { // out of order on purpose
		took = append(took, time.Duration(i)*time.Millisecond)
	}
	got := percentiles(took)
	if got != (latency{P50: 50 * time.Millisecond, P95: 95 * time.Millisecond, Max: 100 * time.Millisecond}) {
		t.Errorf("percentiles of 1..100 ms: got %+v, want p50 50 ms, p95 95 ms, max 100 ms", got)
	}
	if got := percentiles([]time.Duration{7}); got.P50 != 7 || got.P95 != 7 {
		t.Errorf("one sample: got %+v", got)
	}
}

// TestReportWrite checks that a report replaces only the part of search.md
// between the markers, and appends one record per golden file.
func TestReportWrite(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "search.md")
	if err := os.WriteFile(md, []byte("# Tool search\nbefore\n"+openMarker+"\nold figures\n"+closeMarker+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := searcheval.Query{ID: "q1", Query: "weather in Lyon", Relevant: map[string]int{"weather:get_weather": 2}}
	h := &half{name: "dev", path: "dev.jsonl", queries: []searcheval.Query{q},
		ranks: map[string][]string{"q1": {"time:now", "weather:get_weather"}}, took: []time.Duration{time.Millisecond},
		savedRanks: map[string][]string{"q1": {"time:now", "weather:get_weather"}}, savedTook: []time.Duration{2 * time.Millisecond}}
	rep := report{cfg: config{command: "bench", name: "search", commit: "abc", limit: 10, copies: 1}, date: time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC),
		halves: []*half{h}, tools: 2, servers: 2, machine: "m"}
	for range 2 {
		if err := rep.write(dir); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.HasPrefix(text, "# Tool search\nbefore\n"+openMarker+"\n") || !strings.HasSuffix(text, closeMarker+"\nafter\n") ||
		strings.Contains(text, "old figures") || strings.Count(text, "| search, dev | 1 |") != 1 {
		t.Errorf("search.md after two writes:\n%s", text)
	}
	// The relevant tool is second: Recall@1 0, Recall@3 1, MRR 0.5.
	if !strings.Contains(text, "| search, dev | 1 | 0.000 | 1.000 | 1.000 | 1.000 | 0.000 | 1.000 | 0.500 |") {
		t.Errorf("search.md lacks the expected row:\n%s", text)
	}
	jl, err := os.ReadFile(filepath.Join(dir, "search.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(jl)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"commit":"abc"`) || !strings.Contains(lines[0], `"mrr":0.5`) {
		t.Errorf("search.jsonl after two writes:\n%s", jl)
	}
	if err := os.WriteFile(md, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rep.write(dir); err == nil || !strings.Contains(err.Error(), openMarker) {
		t.Errorf("search.md without markers: got %v, want an error naming them", err)
	}
}
