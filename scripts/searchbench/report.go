package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery/search/searcheval"
)

// report is one run of the benchmark: a table of the metrics per golden
// file, the searches' latency, and what starting the servers took.
type report struct {
	cfg            config
	date           time.Time
	halves         []*half
	tools, servers int
	start          started
	machine        string
	elapsed        time.Duration
}

// latency is the nearest-rank percentiles of a half's searches.
type latency struct {
	P50, P95, Max time.Duration
}

func percentiles(took []time.Duration) latency {
	s := slices.Sorted(slices.Values(took))
	if len(s) == 0 {
		return latency{}
	}
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return latency{P50: at(0.50), P95: at(0.95), Max: s[len(s)-1]}
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + " ms" }

// text is the report as Markdown: what was run, the table, the latency.
func (rep report) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "`%s`, %s, codebridge %s, on %s: %d tools of %d servers, each query run as `search_tool_docs(query, limit=%d)` by code in the sandbox.\n\n",
		rep.cfg.command, rep.date.Format("2006-01-02 15:04 UTC"), rep.cfg.commit, rep.machine, rep.tools, rep.servers, rep.cfg.limit)
	if rep.cfg.copies == 1 {
		var rows []searcheval.Row
		for _, h := range rep.halves {
			rows = append(rows, searcheval.Row{Name: rep.cfg.name + ", " + h.name, Report: searcheval.Evaluate(h.queries, h.ranks)})
		}
		searcheval.WriteTable(&b, rows...)
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, "The corpus served %d times (servers NAME-2 to NAME-%d beside the originals): latency only, the rankings are not scored.\n\n", rep.cfg.copies, rep.cfg.copies)
	}
	b.WriteString("Each search as the code timed it (`time.perf_counter_ns()` around the `await`), through the sandbox's bridge to codebridge and back: ")
	if rep.cfg.copies == 1 {
		b.WriteString("with every server running (as after any call), and ")
	}
	b.WriteString("from the saved tool lists, in a new codebridge over the same state folder where no server runs:\n\n")
	b.WriteString("| golden set | searches | running p50 | p95 | saved lists p50 | p95 | max |\n|---|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, took, saved []time.Duration) {
		r, s := percentiles(took), percentiles(saved)
		run50, run95 := "-", "-"
		if len(took) > 0 {
			run50, run95 = ms(r.P50), ms(r.P95)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", name, len(saved), run50, run95, ms(s.P50), ms(s.P95), ms(max(r.Max, s.Max)))
	}
	var all, allSaved []time.Duration
	for _, h := range rep.halves {
		row(h.name, h.took, h.savedTook)
		all, allSaved = append(all, h.took...), append(allSaved, h.savedTook...)
	}
	if len(rep.halves) > 1 {
		row("all", all, allSaved)
	}
	if rep.cfg.copies == 1 {
		differ, n := 0, 0
		for _, h := range rep.halves {
			for _, q := range h.queries {
				n++
				if !slices.Equal(h.ranks[q.ID], h.savedRanks[q.ID]) {
					differ++
				}
			}
		}
		fmt.Fprintf(&b, "\nThe rankings from the saved lists equal those with the servers running for %d of %d queries.", n-differ, n)
	}
	fmt.Fprintf(&b, "\nBefore the searches: listing every server's tools from code, which started the %d servers, %.2f s; the first search after that %s, the first of the second codebridge %s. The whole run %.0f s.\n",
		rep.servers, rep.start.listed.Seconds(), ms(rep.start.firstSearch), ms(rep.start.firstSaved), rep.elapsed.Seconds())
	return b.String()
}

// record is one golden file's figures in search.jsonl.
type record struct {
	Date    string             `json:"date"`
	Commit  string             `json:"commit"`
	Name    string             `json:"name"`
	Command string             `json:"command"`
	Golden  string             `json:"golden"`
	SHA256  string             `json:"golden_sha256"` // of the golden file, which may not be committed yet
	Queries int                `json:"queries"`
	Tools   int                `json:"tools"`
	Servers int                `json:"servers"`
	Limit   int                `json:"limit"`
	Recall  map[string]float64 `json:"recall"` // by k
	Hit     map[string]float64 `json:"hit"`    // by k
	MRR     float64            `json:"mrr"`
	NDCG10  float64            `json:"ndcg10"`
	P50MS   float64            `json:"p50_ms"`
	P95MS   float64            `json:"p95_ms"`
	// From the saved tool lists, no server running.
	SavedP50MS float64 `json:"saved_p50_ms"`
	SavedP95MS float64 `json:"saved_p95_ms"`
	Machine    string  `json:"machine"`
}

func (rep report) records() []record {
	var rs []record
	for _, h := range rep.halves {
		m := searcheval.Evaluate(h.queries, h.ranks).Mean
		l, sl := percentiles(h.took), percentiles(h.savedTook)
		r := record{Date: rep.date.Format(time.RFC3339), Commit: rep.cfg.commit, Name: rep.cfg.name, Command: rep.cfg.command,
			Golden: filepath.ToSlash(h.path), SHA256: h.sha256, Queries: len(h.queries), Tools: rep.tools, Servers: rep.servers, Limit: rep.cfg.limit,
			Recall: map[string]float64{}, Hit: map[string]float64{}, MRR: round(m.MRR), NDCG10: round(m.NDCG10),
			P50MS: float64(l.P50.Microseconds()) / 1000, P95MS: float64(l.P95.Microseconds()) / 1000, Machine: rep.machine,
			SavedP50MS: float64(sl.P50.Microseconds()) / 1000, SavedP95MS: float64(sl.P95.Microseconds()) / 1000}
		for i, k := range searcheval.Cutoffs {
			r.Recall[strconv.Itoa(k)] = round(m.Recall[i])
			r.Hit[strconv.Itoa(k)] = round(m.Hit[i])
		}
		rs = append(rs, r)
	}
	return rs
}

func round(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }

// Markers around the part of search.md the benchmark writes.
const (
	openMarker  = "<!-- search-bench -->"
	closeMarker = "<!-- /search-bench -->"
)

// write replaces the benchmark's part of dir/search.md with the report and
// appends its records to dir/search.jsonl (nothing when dir is empty).
func (rep report) write(dir string) error {
	if dir == "" {
		return nil
	}
	md := filepath.Join(dir, "search.md")
	old, err := os.ReadFile(md)
	if err != nil {
		return fmt.Errorf("reading %s, whose benchmark part is replaced: %w", md, err)
	}
	before, rest, ok := strings.Cut(string(old), openMarker)
	_, after, ok2 := strings.Cut(rest, closeMarker)
	if !ok || !ok2 {
		return fmt.Errorf("%s: want the markers %s and %s around the benchmark's part", md, openMarker, closeMarker)
	}
	if err := os.WriteFile(md, []byte(before+openMarker+"\n"+rep.text()+closeMarker+after), 0o644); err != nil {
		return err
	}
	var jl bytes.Buffer
	for _, r := range rep.records() {
		jl.WriteString(mustJSON(r) + "\n")
	}
	f, err := os.OpenFile(filepath.Join(dir, "search.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(jl.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// machine describes this machine: CPU model, cores, memory, and its load
// when the run started.
func machine() string {
	model := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.Join(strings.Fields(v), " ")
				break
			}
		}
	}
	desc := fmt.Sprintf("%s, %d cores", model, runtime.NumCPU())
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			desc += fmt.Sprintf(", %d GiB", (kb+1<<19)>>20)
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		desc += ", load " + strings.Fields(string(b))[0]
	}
	return desc
}

// gitDescribe names the commit of this folder, -dirty when tracked files
// were changed; "unknown" outside a git checkout.
func gitDescribe() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
