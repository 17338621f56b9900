package search

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery/search/searcheval"
)

// BenchmarkSearch times one Search(query, 10) per op over the LiveMCPTool
// corpus: its first 500 tools, and 5,000 tools made of the corpus repeated
// with renamed servers ("weather-2", ...) so the vocabulary stays real. The
// queries rotate through the golden files' (benchQueries). Besides ns/op, a
// sub-benchmark reports the median of its queries' times as p50-ns/query.
// NewIndex at 5,000 tools is timed on its own: bridge/host's SearchToolDocs
// builds an index on every call, so a search from code costs both.
func BenchmarkSearch(b *testing.B) {
	tools, err := searcheval.LoadCorpus("testdata/livemcptool/tools.json")
	if err != nil {
		b.Fatal(err)
	}
	docs := corpusDocs(b, tools)
	queries := benchQueries(b)
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			ix := NewIndex(scaledDocs(docs, n))
			took := make([]time.Duration, 0, 1<<20)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q := queries[i%len(queries)]
				i++
				start := time.Now()
				ix.Search(q, 10)
				if len(took) < cap(took) {
					took = append(took, time.Since(start))
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/query")
		})
	}
	b.Run("NewIndex/tools=5000", func(b *testing.B) {
		d := scaledDocs(docs, 5000)
		b.ReportAllocs()
		for b.Loop() {
			NewIndex(d)
		}
	})
}

// scaledDocs is n documents from docs, repeated as often as needed, the
// servers of the k-th copy renamed with a suffix "-k" (k from 2).
func scaledDocs(docs []Doc, n int) []Doc {
	out := make([]Doc, 0, n)
	for c := 1; len(out) < n; c++ {
		for _, d := range docs {
			if len(out) == n {
				break
			}
			if c > 1 {
				d.Server = fmt.Sprintf("%s-%d", d.Server, c)
			}
			out = append(out, d)
		}
	}
	return out
}

// benchQueries are the queries of the golden files there are, in order;
// a fixed list of requests worded as users word them when there is none.
func benchQueries(b *testing.B) []string {
	var qs []string
	for _, path := range []string{"testdata/golden/dev.jsonl", "testdata/golden/test.jsonl"} {
		golden, err := searcheval.LoadGolden(path, nil)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range golden {
			qs = append(qs, q.Query)
		}
	}
	if len(qs) == 0 {
		qs = []string{
			"what's the weather in Lyon tomorrow",
			"which files did I change but not commit",
			"current price of bitcoin in euros",
			"take a screenshot of a web page",
			"search arxiv for papers on retrieval augmented generation",
			"read the text of a pdf",
			"convert 100 dollars to yen",
			"top stories on hacker news",
			"make a bar chart of monthly sales",
			"pick a random number between 1 and 6",
		}
	}
	return qs
}
