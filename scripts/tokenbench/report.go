package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/server"
)

// report is the benchmark's output: a table per task and totals, as text,
// JSON lines and an SVG chart.
type report struct {
	results   []result
	counts    map[string]int    // tools per server
	serverTok map[string]tokens // tokens of each server's tool list
	manualTok tokens            // codebridge's manual resource
	listings  []listing         // what each way lists: direct, then each lane
	date      time.Time
	command   string
	elapsed   time.Duration
}

// total sums the results.
func (rep report) total() result {
	t := result{Task: "total"}
	for _, r := range rep.results {
		t.Direct = t.Direct.plus(r.Direct)
		t.DirectUsed = t.DirectUsed.plus(r.DirectUsed)
		t.Codebridge = t.Codebridge.plus(r.Codebridge)
		t.Wall += r.Wall
		t.DirectWall += r.DirectWall
		t.ImageTok += r.ImageTok
	}
	return t
}

func (m measure) plus(n measure) measure {
	return measure{Turns: m.Turns + n.Turns, Context: m.Context.add(n.Context), Input: m.Input.add(n.Input),
		Output: m.Output.add(n.Output), Bytes: m.Bytes + n.Bytes}
}

func pct(direct, cb int) string {
	if direct == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.0f%%", 100*float64(cb-direct)/float64(direct))
}

// text is the tables: the servers, then one row per task and the totals.
func (rep report) text() string {
	var b bytes.Buffer
	tools := 0
	fmt.Fprintf(&b, "Servers (tools, tokens of their tools/list in o200k):")
	for _, s := range servers {
		fmt.Fprintf(&b, " %s %d (%d),", s.name, rep.counts[s.name], rep.serverTok[s.name][1])
		tools += rep.counts[s.name]
	}
	fmt.Fprintf(&b, " %d tools in all.\n\n", tools)
	fmt.Fprintln(&b, "Tokens in the context when the final turn starts, direct (d) and through codebridge (cb); d used: direct with only the task's servers configured; input: summed over the turns.")
	w := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "task\tkind\tcl100k d\tcl100k cb\to200k d\to200k cb\tchange\to200k d used\tturns d/cb\tKB d/cb\twall d/cb\tinput o200k d/cb\t")
	row := func(r result) {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d/%d\t%.1f/%.1f\t%.2fs/%.2fs\t%d/%d\t\n", r.Task, r.Kind,
			r.Direct.Context[0], r.Codebridge.Context[0], r.Direct.Context[1], r.Codebridge.Context[1],
			pct(r.Direct.Context[1], r.Codebridge.Context[1]), r.DirectUsed.Context[1],
			r.Direct.Turns, r.Codebridge.Turns, float64(r.Direct.Bytes)/1000, float64(r.Codebridge.Bytes)/1000,
			r.DirectWall.Seconds(), r.Wall.Seconds(), r.Direct.Input[1], r.Codebridge.Input[1])
	}
	for _, r := range rep.results {
		row(r)
	}
	row(rep.total())
	w.Flush()
	if len(rep.results) > 0 && rep.results[0].ReplayDirect != nil {
		fmt.Fprintln(&b, "\nReplayed with a real model: the usage the API reported, direct (d) and through codebridge (cb).")
		w := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "task\tturns d/cb\tinput d/cb\toutput d/cb\tcache read d/cb\t")
		for _, r := range rep.results {
			d, c := r.ReplayDirect.Usage, r.ReplayCodebridge.Usage
			fmt.Fprintf(w, "%s\t%d/%d\t%d/%d\t%d/%d\t%d/%d\t\n", r.Task, r.ReplayDirect.Turns, r.ReplayCodebridge.Turns,
				d.InputTokens, c.InputTokens, d.OutputTokens, c.OutputTokens, d.CacheRead, c.CacheRead)
		}
		w.Flush()
	}
	if len(rep.listings) > 0 {
		fmt.Fprintf(&b, "\n%s", listingsText(rep.listings))
	}
	fmt.Fprintf(&b, "\nNot in the codebridge figures: its manual (the resource %s), %d cl100k / %d o200k tokens, which a model may read once per conversation.\n",
		server.ManualURI, rep.manualTok[0], rep.manualTok[1])
	fmt.Fprintf(&b, "\n%s, %s, in %.0fs.\n", rep.command, rep.date.Format("2006-01-02 15:04 UTC"), rep.elapsed.Seconds())
	return b.String()
}

// write puts benchmark.jsonl, benchmark.svg and the results part of
// benchmark.md into dir (nothing when dir is empty). benchmark.md's text
// outside the markers is kept: the method is written there by hand.
func (rep report) write(dir string) error {
	if dir == "" {
		return nil
	}
	var jl bytes.Buffer
	enc := json.NewEncoder(&jl)
	for _, r := range append(rep.results, rep.total()) {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "benchmark.jsonl"), jl.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "benchmark.svg"), []byte(rep.svg()), 0o644); err != nil {
		return err
	}
	md := filepath.Join(dir, "benchmark.md")
	old, err := os.ReadFile(md)
	if err != nil {
		return fmt.Errorf("reading %s, whose results part is replaced: %w", md, err)
	}
	updated, err := replaceBetween(string(old), "<!-- results -->", "<!-- /results -->", "\n```\n"+rep.text()+"```\n\n![tokens per task](benchmark.svg)\n\n")
	if err != nil {
		return fmt.Errorf("%s: %w", md, err)
	}
	return os.WriteFile(md, []byte(updated), 0o644)
}

func replaceBetween(s, open, close, with string) (string, error) {
	before, rest, ok := strings.Cut(s, open)
	_, after, ok2 := strings.Cut(rest, close)
	if !ok || !ok2 {
		return "", fmt.Errorf("want the markers %s and %s", open, close)
	}
	return before + open + with + close + after, nil
}

// svg is a horizontal bar chart of the o200k context tokens per task: direct
// with every server, direct with only the task's servers, and codebridge, on
// a log scale so the small figures stay visible.
func (rep report) svg() string {
	const (
		left, top, barH, gap, width = 220, 40, 9, 10, 520
	)
	series := []struct {
		name, color string
		value       func(result) int
	}{
		{"direct, all servers configured", "#d95f02", func(r result) int { return r.Direct.Context[1] }},
		{"direct, only the task's servers", "#7570b3", func(r result) int { return r.DirectUsed.Context[1] }},
		{"codebridge (run_python)", "#1b9e77", func(r result) int { return r.Codebridge.Context[1] }},
	}
	maxV := 1
	for _, r := range rep.results {
		for _, s := range series {
			maxV = max(maxV, s.value(r))
		}
	}
	// log10 scale from 100 tokens.
	scale := func(v int) float64 {
		lo, hi := 2.0, log10(float64(maxV))
		x := (log10(float64(max(v, 100))) - lo) / (hi - lo)
		return x * width
	}
	groupH := len(series)*barH + gap
	height := top + len(rep.results)*groupH + 60
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", left+width+80, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="13" font-weight="bold">Context tokens per task (o200k, log scale): %s, %s</text>`+"\n",
		html.EscapeString(rep.command), rep.date.Format("2006-01-02"))
	for i, r := range rep.results {
		y := top + i*groupH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-6, y+barH*2, html.EscapeString(r.Task))
		for j, s := range series {
			v := s.value(r)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, left, y+j*barH, scale(v), barH-1, s.color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="9">%d</text>`+"\n", float64(left)+scale(v)+3, y+j*barH+barH-1, v)
		}
	}
	ly := height - 40
	for j, s := range series {
		x := 10 + j*230
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x, ly, s.color, x+14, ly+9, html.EscapeString(s.name))
	}
	fmt.Fprintf(&b, `<text x="10" y="%d" font-size="9">Bars start at 100 tokens. The method, assumptions and limits: docs/benchmark.md.</text>`+"\n", height-12)
	b.WriteString("</svg>\n")
	return b.String()
}

func log10(x float64) float64 { return math.Log10(x) }
