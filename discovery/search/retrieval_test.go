package search

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/typed"
	"github.com/codebridge-mcp/codebridge/discovery/search/searcheval"
)

var showMisses = flag.Bool("misses", false, "TestRetrieval: list the dev queries whose relevant tools are not all in the top 5")

// retrievalFloor is what the search must keep on the dev half: a little
// under what it scores, so a change that breaks ranking fails here.
var retrievalFloor = struct{ recall5, mrr float64 }{0.74, 0.71} // measured: 0.781, 0.749

// corpusDocs indexes the LiveMCPTool corpus the way bridge/host's
// SearchToolDocs indexes a listing.
func corpusDocs(t testing.TB, tools []searcheval.Tool) []Doc {
	t.Helper()
	docs := make([]Doc, len(tools))
	for i, c := range tools {
		tool := &mcp.Tool{Name: c.Tool, Description: c.Description}
		if len(c.InputSchema) > 0 {
			tool.InputSchema = c.InputSchema
		}
		docs[i] = Doc{Server: c.Server, Tool: c.Tool, Description: c.Description, Params: typed.ParamNames(tool)}
	}
	return docs
}

// rankings runs every query through ix and keeps the first k keys.
func rankings(ix *Index, queries []searcheval.Query, k int) map[string][]string {
	out := make(map[string][]string, len(queries))
	for _, q := range queries {
		for _, h := range ix.Search(q.Query, k) {
			out[q.ID] = append(out[q.ID], searcheval.Key(h.Doc.Server, h.Doc.Tool))
		}
	}
	return out
}

// TestRetrieval scores the search on the golden set over LiveMCPTool and
// prints the table (go test ./discovery/search -run TestRetrieval -v). Only
// the dev half is used for tuning; the test half is scored when present.
func TestRetrieval(t *testing.T) {
	tools, err := searcheval.LoadCorpus(filepath.Join("testdata", "livemcptool", "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex(corpusDocs(t, tools))
	var rows []searcheval.Row
	var dev searcheval.Report
	for _, half := range []string{"dev", "test"} {
		qs, err := searcheval.LoadGolden(filepath.Join("testdata", "golden", half+".jsonl"), tools)
		if half == "test" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rep := searcheval.Evaluate(qs, rankings(ix, qs, 10))
		rows = append(rows, searcheval.Row{Name: half, Report: rep})
		if half == "dev" {
			dev = rep
		}
	}
	var b bytes.Buffer
	if err := searcheval.WriteTable(&b, rows...); err != nil {
		t.Fatal(err)
	}
	t.Logf("LiveMCPTool, %d tools, top 10 of Index.Search:\n%s", len(tools), b.String())
	if *showMisses {
		t.Log(misses(dev))
	}
	m := dev.Mean
	if r5 := m.Recall[slices.Index(searcheval.Cutoffs[:], 5)]; r5 < retrievalFloor.recall5 || m.MRR < retrievalFloor.mrr {
		t.Errorf("dev half: Recall@5 %.3f, MRR %.3f; the floor is %.3f and %.3f: a change made the search worse (rerun with -misses to see which queries)",
			r5, m.MRR, retrievalFloor.recall5, retrievalFloor.mrr)
	}
}

// misses lists the queries with a relevant tool outside the top 5, and the
// rank of each relevant tool (0: not in the top 10).
func misses(rep searcheval.Report) string {
	var b strings.Builder
	for _, r := range rep.PerQuery {
		if r.Recall[2] == 1 {
			continue
		}
		fmt.Fprintf(&b, "%s %q:", r.Query.ID, r.Query.Query)
		keys := make([]string, 0, len(r.Ranks))
		for k := range r.Ranks {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s(g%d)@%d", k, r.Query.Relevant[k], r.Ranks[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}
