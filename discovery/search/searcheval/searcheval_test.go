package searcheval

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestScore(t *testing.T) {
	tests := []struct {
		name    string
		rel     map[string]int
		ranking []string
		want    Metrics
	}{
		{
			// grades by rank: 0 2 0 1 0 0 0 0 0 0 2; three relevant tools.
			name:    "mixed",
			rel:     map[string]int{"s:a": 2, "s:b": 1, "s:c": 2},
			ranking: []string{"s:x", "s:a", "s:y", "s:b", "s:z", "s:w", "s:v", "s:u", "s:t", "s:s", "s:c"},
			want: Metrics{
				Recall: [4]float64{0, 1.0 / 3, 2.0 / 3, 2.0 / 3},
				Hit:    [4]float64{0, 1, 1, 1},
				MRR:    0.5,
				// DCG: gain 3 at rank 2, 1 at rank 4; ideal: 3, 3, 1 at ranks 1-3.
				NDCG10: (3/math.Log2(3) + 1/math.Log2(5)) / (3 + 3/math.Log2(3) + 1/math.Log2(4)),
			},
		},
		{
			name:    "perfect",
			rel:     map[string]int{"s:a": 2},
			ranking: []string{"s:a", "s:b"},
			want:    Metrics{Recall: [4]float64{1, 1, 1, 1}, Hit: [4]float64{1, 1, 1, 1}, MRR: 1, NDCG10: 1},
		},
		{
			// the repeat of s:a counts once, so s:b is second.
			name:    "repeats",
			rel:     map[string]int{"s:b": 1, "s:c": 2},
			ranking: []string{"s:a", "s:a", "s:b"},
			want: Metrics{
				Recall: [4]float64{0, 0.5, 0.5, 0.5},
				Hit:    [4]float64{0, 1, 1, 1},
				MRR:    0.5,
				NDCG10: (1 / math.Log2(3)) / (3 + 1/math.Log2(3)),
			},
		},
		{
			name: "no ranking",
			rel:  map[string]int{"s:a": 2},
		},
		{
			// a grade-1 tool first and the grade-2 one beyond 10: found for
			// MRR, not for Recall@10.
			name:    "late",
			rel:     map[string]int{"s:a": 2, "s:b": 1},
			ranking: []string{"s:b", "s:1", "s:2", "s:3", "s:4", "s:5", "s:6", "s:7", "s:8", "s:9", "s:a"},
			want: Metrics{
				Recall: [4]float64{0.5, 0.5, 0.5, 0.5},
				Hit:    [4]float64{1, 1, 1, 1},
				MRR:    1,
				NDCG10: 1 / (3 + 1/math.Log2(3)),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(Query{ID: "q", Query: "x", Relevant: tt.rel}, tt.ranking).Metrics
			if !metricsNear(got, tt.want) {
				t.Errorf("Score = %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := (3/math.Log2(3) + 1/math.Log2(5)) / (3 + 3/math.Log2(3) + 1/math.Log2(4)); math.Abs(got-0.43085) > 1e-4 {
		t.Errorf("hand-computed nDCG of the mixed case = %.5f, want 0.43085", got)
	}
}

func metricsNear(a, b Metrics) bool {
	for i := range Cutoffs {
		if !near(a.Recall[i], b.Recall[i]) || !near(a.Hit[i], b.Hit[i]) {
			return false
		}
	}
	return near(a.MRR, b.MRR) && near(a.NDCG10, b.NDCG10)
}

func TestEvaluateMeansAndMissing(t *testing.T) {
	qs := []Query{
		{ID: "q1", Query: "one", Relevant: map[string]int{"s:a": 2, "s:b": 1}},
		{ID: "q2", Query: "two", Relevant: map[string]int{"s:c": 2}},
		{ID: "q3", Query: "three", Relevant: map[string]int{"s:d": 2}},
	}
	rep := Evaluate(qs, map[string][]string{
		"q1":    {"s:b", "s:a"}, // Recall@1 0.5, MRR 1
		"q2":    {"s:x", "s:y", "s:z", "s:c"},
		"other": {"s:d"}, // not a query: ignored; q3 has no ranking
	})
	if rep.Queries != 3 || len(rep.PerQuery) != 3 {
		t.Fatalf("Queries = %d, PerQuery has %d, want 3 and 3", rep.Queries, len(rep.PerQuery))
	}
	want := Metrics{
		Recall: [4]float64{0.5 / 3, 1.0 / 3, 2.0 / 3, 2.0 / 3},
		Hit:    [4]float64{1.0 / 3, 1.0 / 3, 2.0 / 3, 2.0 / 3},
		MRR:    (1 + 0.25) / 3,
		// q1: gains 1 then 3 against ideal 3 then 1; q2: 3 at rank 4 against 3 at 1.
		NDCG10: ((1+3/math.Log2(3))/(3+1/math.Log2(3)) + (3/math.Log2(5))/3) / 3,
	}
	if !metricsNear(rep.Mean, want) {
		t.Errorf("Mean = %+v, want %+v", rep.Mean, want)
	}
	if r := rep.PerQuery[1].Ranks["s:c"]; r != 4 {
		t.Errorf("rank of s:c = %d, want 4", r)
	}
	if r, ok := rep.PerQuery[2].Ranks["s:d"]; !ok || r != 0 {
		t.Errorf("rank of unranked s:d = %d, %v; want 0, true", r, ok)
	}
}

func TestParseGolden(t *testing.T) {
	corpus := []Tool{{Server: "s", Tool: "a"}, {Server: "s", Tool: "b"}}
	good := `{"id":"d001","query":"do a","relevant":{"s:a":2,"s:b":1}}

{"id":"d002","query":"do b","relevant":{"s:b":2}}
`
	qs, err := ParseGolden(strings.NewReader(good), corpus)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Relevant["s:b"] != 1 || qs[1].ID != "d002" {
		t.Errorf("ParseGolden = %+v", qs)
	}
	bad := []struct{ name, in, want string }{
		{"unknown key", `{"id":"d1","query":"q","relevant":{"s:zz":2}}`, "not a tool of the corpus"},
		{"grade 3", `{"id":"d1","query":"q","relevant":{"s:a":3}}`, "grade 3"},
		{"no grade 2", `{"id":"d1","query":"q","relevant":{"s:a":1}}`, "no tool of grade 2"},
		{"no relevant", `{"id":"d1","query":"q","relevant":{}}`, "no relevant tools"},
		{"empty query", `{"id":"d1","query":" ","relevant":{"s:a":2}}`, "empty query"},
		{"no id", `{"query":"q","relevant":{"s:a":2}}`, "no id"},
		{"unknown field", `{"id":"d1","query":"q","relevant":{"s:a":2},"grade":1}`, "unknown field"},
		{"not json", `id d1`, "line 1"},
		{"twice", `{"id":"d1","query":"q","relevant":{"s:a":2}}` + "\n" + `{"id":"d1","query":"r","relevant":{"s:a":2}}`, "line 2: id \"d1\" used twice"},
		{"empty", "\n\n", "no queries"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseGolden(strings.NewReader(tt.in), corpus)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseGolden(%q) error = %v, want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
	// Without a corpus, keys are not checked.
	if _, err := ParseGolden(strings.NewReader(`{"id":"d1","query":"q","relevant":{"x:y":2}}`), nil); err != nil {
		t.Errorf("without a corpus: %v", err)
	}
}

func TestLoadCorpus(t *testing.T) {
	tools, err := LoadCorpus(filepath.Join("..", "testdata", "livemcptool", "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 527 {
		t.Errorf("LiveMCPTool has %d tools, want 527", len(tools))
	}
	if _, err := LoadCorpus(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("a missing corpus loaded")
	}
}

func TestWriteTable(t *testing.T) {
	qs := []Query{{ID: "q1", Query: "one", Relevant: map[string]int{"s:a": 2, "s:b": 1}}}
	var b strings.Builder
	// nDCG@10: 3/log2(3) / (3 + 1/log2(3)) = 1.8928 / 3.6309 = 0.521.
	if err := WriteTable(&b, Row{Name: "bm25 | dev", Report: Evaluate(qs, map[string][]string{"q1": {"s:x", "s:a"}})}); err != nil {
		t.Fatal(err)
	}
	want := "| run | queries | Recall@1 | Recall@3 | Recall@5 | Recall@10 | Hit@1 | Hit@5 | MRR | nDCG@10 |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" +
		"| bm25 \\| dev | 1 | 0.000 | 0.500 | 0.500 | 0.500 | 0.000 | 1.000 | 0.500 | 0.521 |\n"
	if b.String() != want {
		t.Errorf("WriteTable =\n%s\nwant\n%s", b.String(), want)
	}
}
