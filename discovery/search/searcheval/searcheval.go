// Package searcheval scores tool search against a golden set: it loads the
// LiveMCPTool corpus and golden query files, and computes Recall@k, Hit@k,
// MRR and nDCG@10 over ranked lists of "server:tool" keys.
//
// It knows nothing about how the rankings were made, so the same code scores
// the in-process index (discovery/search) and the real search_tool_docs run
// end to end through a sandbox.
//
// # Golden files
//
// A golden file is JSON Lines, one query a line:
//
//	{"id":"d001","query":"what's the weather in Lyon tomorrow","relevant":{"weather:get-forecast":2}}
//
// relevant maps a tool's key ("server:tool") to its grade: 2 means the tool
// does what was asked, 1 that it partly does or is an acceptable answer.
// Tools not listed are grade 0. Every query has at least one grade-2 tool.
//
// # Metrics
//
// A tool is relevant when its grade is at least 1. For each query, with R its
// relevant tools and top(k) the first k keys of its ranking:
//
//   - Recall@k = |R ∩ top(k)| / |R|, the standard IR recall: the share of the
//     query's relevant tools found in the first k.
//   - Hit@k = 1 if top(k) holds at least one relevant tool, else 0 (often
//     called success@k).
//   - MRR: 1/rank of the first relevant tool anywhere in the ranking, 0 if
//     none is; rankings cut at 10 (as TestRetrieval's are) make it MRR@10.
//   - nDCG@10: DCG@10 / IDCG@10 with gain 2^grade − 1 and discount
//     log2(rank+1); IDCG is the DCG of the grades sorted best first.
//
// Each figure is averaged over all queries of the golden set. A query with no
// ranking, or an empty one, scores 0 on everything. Repeated keys in a
// ranking count once, at their first rank.
package searcheval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
)

// Tool is one tool of a corpus.
type Tool struct {
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// Key returns the tool's key in golden files and rankings: "server:tool".
func (t Tool) Key() string { return Key(t.Server, t.Tool) }

// Key joins a server's and a tool's name into a key, "server:tool".
func Key(server, tool string) string { return server + ":" + tool }

// LoadCorpus reads a corpus file shaped like LiveMCPTool's tools.json: an
// object whose "tools" array holds {server, tool, description, inputSchema}.
func LoadCorpus(path string) ([]Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading corpus: %w", err)
	}
	var f struct {
		Tools []Tool `json:"tools"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parsing corpus %s: %w", path, err)
	}
	if len(f.Tools) == 0 {
		return nil, fmt.Errorf("corpus %s has no tools: want an object with a \"tools\" array", path)
	}
	seen := map[string]bool{}
	for i, t := range f.Tools {
		if t.Server == "" || t.Tool == "" {
			return nil, fmt.Errorf("corpus %s: tool %d has an empty server or tool name", path, i)
		}
		if seen[t.Key()] {
			return nil, fmt.Errorf("corpus %s: tool %s appears twice", path, t.Key())
		}
		seen[t.Key()] = true
	}
	return f.Tools, nil
}

// Query is one line of a golden file.
type Query struct {
	ID       string         `json:"id"`
	Query    string         `json:"query"`
	Relevant map[string]int `json:"relevant"` // key → grade, 1 or 2
}

// LoadGolden reads a golden file. If corpus is not nil, every key must name
// one of its tools.
func LoadGolden(path string, corpus []Tool) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading golden set: %w", err)
	}
	defer f.Close()
	qs, err := ParseGolden(f, corpus)
	if err != nil {
		return nil, fmt.Errorf("golden set %s: %w", path, err)
	}
	return qs, nil
}

// ParseGolden reads golden queries from r, one JSON object a line; blank
// lines are skipped. It checks each line's shape (an id, a query, at least
// one grade-2 tool, grades 1 or 2, ids unique) and, if corpus is not nil,
// that every key names one of its tools.
func ParseGolden(r io.Reader, corpus []Tool) ([]Query, error) {
	var known map[string]bool
	if corpus != nil {
		known = make(map[string]bool, len(corpus))
		for _, t := range corpus {
			known[t.Key()] = true
		}
	}
	var qs []Query
	ids := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var q Query
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			return nil, fmt.Errorf("line %d: %w (want {\"id\":...,\"query\":...,\"relevant\":{\"server:tool\":2}})", n, err)
		}
		if err := q.check(known); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if ids[q.ID] {
			return nil, fmt.Errorf("line %d: id %q used twice", n, q.ID)
		}
		ids[q.ID] = true
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, errors.New("no queries")
	}
	return qs, nil
}

func (q Query) check(known map[string]bool) error {
	switch {
	case q.ID == "":
		return errors.New("no id")
	case strings.TrimSpace(q.Query) == "":
		return fmt.Errorf("%s: empty query", q.ID)
	case len(q.Relevant) == 0:
		return fmt.Errorf("%s: no relevant tools", q.ID)
	}
	best := 0
	for k, g := range q.Relevant {
		if g != 1 && g != 2 {
			return fmt.Errorf("%s: %s has grade %d, want 1 (partial) or 2 (does it)", q.ID, k, g)
		}
		if known != nil && !known[k] {
			return fmt.Errorf("%s: %s is not a tool of the corpus (keys are \"server:tool\")", q.ID, k)
		}
		best = max(best, g)
	}
	if best < 2 {
		return fmt.Errorf("%s: no tool of grade 2", q.ID)
	}
	return nil
}

// Cutoffs are the k of Recall@k and Hit@k.
var Cutoffs = [...]int{1, 3, 5, 10}

// Metrics are the figures of one query, or their means over a golden set.
// Recall[i] and Hit[i] are at Cutoffs[i].
type Metrics struct {
	Recall [len(Cutoffs)]float64
	Hit    [len(Cutoffs)]float64
	MRR    float64
	NDCG10 float64
}

// QueryResult is the score of one query, with the rank (1-based) of each of
// its relevant tools in the ranking, 0 if it was not ranked.
type QueryResult struct {
	Query Query
	Ranks map[string]int
	Metrics
}

// Report is the score of a golden set: the means and each query's result, in
// the order of the golden set.
type Report struct {
	Queries  int
	Mean     Metrics
	PerQuery []QueryResult
}

// Evaluate scores rankings, keyed by query id, each a list of "server:tool"
// keys best first, against queries. Rankings of ids not in queries are
// ignored; a query without a ranking scores 0.
func Evaluate(queries []Query, rankings map[string][]string) Report {
	rep := Report{Queries: len(queries)}
	for _, q := range queries {
		r := Score(q, rankings[q.ID])
		rep.PerQuery = append(rep.PerQuery, r)
		m := &rep.Mean
		for i := range Cutoffs {
			m.Recall[i] += r.Recall[i]
			m.Hit[i] += r.Hit[i]
		}
		m.MRR += r.MRR
		m.NDCG10 += r.NDCG10
	}
	if n := float64(len(queries)); n > 0 {
		m := &rep.Mean
		for i := range Cutoffs {
			m.Recall[i] /= n
			m.Hit[i] /= n
		}
		m.MRR /= n
		m.NDCG10 /= n
	}
	return rep
}

// Score scores one query's ranking.
func Score(q Query, ranking []string) QueryResult {
	res := QueryResult{Query: q, Ranks: map[string]int{}}
	for k := range q.Relevant {
		res.Ranks[k] = 0
	}
	// grades in ranked order, after dropping repeats.
	var grades []int
	seen := map[string]bool{}
	for _, key := range ranking {
		if seen[key] {
			continue
		}
		seen[key] = true
		grades = append(grades, q.Relevant[key])
		if q.Relevant[key] > 0 {
			res.Ranks[key] = len(grades)
		}
	}
	relevant := 0
	for _, g := range q.Relevant {
		if g > 0 {
			relevant++
		}
	}
	if relevant == 0 {
		return res
	}
	for i, k := range Cutoffs {
		found := 0
		for _, g := range grades[:min(k, len(grades))] {
			if g > 0 {
				found++
			}
		}
		res.Recall[i] = float64(found) / float64(relevant)
		if found > 0 {
			res.Hit[i] = 1
		}
	}
	for i, g := range grades {
		if g > 0 {
			res.MRR = 1 / float64(i+1)
			break
		}
	}
	ideal := make([]int, 0, len(q.Relevant))
	for _, g := range q.Relevant {
		ideal = append(ideal, g)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ideal)))
	if idcg := dcg(ideal, 10); idcg > 0 {
		res.NDCG10 = dcg(grades, 10) / idcg
	}
	return res
}

// dcg is the discounted cumulative gain of the first k grades.
func dcg(grades []int, k int) float64 {
	var s float64
	for i, g := range grades[:min(k, len(grades))] {
		s += (math.Exp2(float64(g)) - 1) / math.Log2(float64(i+2))
	}
	return s
}

// Row is one line of a table: a name (the search and the golden set it ran
// on, say) and its report.
type Row struct {
	Name   string
	Report Report
}

// WriteTable writes rows as a Markdown table: queries, Recall@1/3/5/10,
// Hit@1/5, MRR and nDCG@10, each to three decimals.
func WriteTable(w io.Writer, rows ...Row) error {
	var b strings.Builder
	b.WriteString("| run | queries |")
	for _, k := range Cutoffs {
		fmt.Fprintf(&b, " Recall@%d |", k)
	}
	b.WriteString(" Hit@1 | Hit@5 | MRR | nDCG@10 |\n|---|---:|")
	b.WriteString(strings.Repeat("---:|", len(Cutoffs)+4))
	b.WriteString("\n")
	for _, r := range rows {
		m := r.Report.Mean
		fmt.Fprintf(&b, "| %s | %d |", strings.ReplaceAll(r.Name, "|", `\|`), r.Report.Queries)
		for i := range Cutoffs {
			fmt.Fprintf(&b, " %.3f |", m.Recall[i])
		}
		fmt.Fprintf(&b, " %.3f | %.3f | %.3f | %.3f |\n", m.Hit[0], m.Hit[slices.Index(Cutoffs[:], 5)], m.MRR, m.NDCG10)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
