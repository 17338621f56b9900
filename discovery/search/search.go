package search

import (
	"cmp"
	"math"
	"slices"
)

// Doc is the documentation of one tool.
type Doc struct {
	Server      string   // the server's name
	Tool        string   // the tool's name
	Description string   // the tool's description
	Params      []string // names of the tool's input parameters
}

// Hit is a document that matched a query, with its BM25 score.
type Hit struct {
	Doc   Doc
	Score float64
}

// BM25 parameters: k1 limits how much a repeated term adds, b how much a long
// document is penalised.
const (
	k1 = 1.2
	b  = 0.75
)

// Field weights: a query word in the tool's name says more than the same word
// in its description. Terms are counted with these weights (BM25F style).
const (
	weightTool        = 3.0
	weightServer      = 2.0
	weightParams      = 1.5
	weightDescription = 1.0
)

// Feedback from the first hit: the documents the query matched are ranked
// again with the feedbackTerms rarest terms of the one that scores best
// added to the query, each counting feedbackWeight of a word of the query.
// Tools that do the same thing describe it with the same words (and the
// tools of one server share its name), so the best match lifts the ones the
// query's wording missed.
const (
	feedbackTerms  = 5
	feedbackWeight = 0.3
)

type posting struct {
	doc int32
	tf  float32 // weighted term frequency
}

// Index is an immutable BM25 index over a set of [Doc]. It is safe for
// concurrent use.
type Index struct {
	docs     []Doc
	postings map[string][]posting // term -> documents containing it, by doc
	terms    [][]string           // each document's distinct terms, sorted
	lens     []float32            // weighted length of each document
	avgLen   float64
}

// NewIndex indexes docs. The slice is copied; the Params slices are shared
// and must not be modified afterwards.
func NewIndex(docs []Doc) *Index {
	ix := &Index{
		docs:     slices.Clone(docs),
		postings: map[string][]posting{},
		terms:    make([][]string, len(docs)),
		lens:     make([]float32, len(docs)),
	}
	var total float64
	tf := map[string]float64{}
	for i, d := range ix.docs {
		clear(tf)
		var n float64
		add := func(text string, w float64) {
			for _, t := range Tokenize(text) {
				tf[t] += w
				n += w
			}
		}
		add(d.Tool, weightTool)
		add(d.Server, weightServer)
		add(d.Description, weightDescription)
		for _, p := range d.Params {
			add(p, weightParams)
		}
		ix.lens[i] = float32(n)
		total += n
		terms := make([]string, 0, len(tf))
		for t, f := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: float32(f)})
			terms = append(terms, t)
		}
		slices.Sort(terms)
		ix.terms[i] = terms
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	if ix.avgLen == 0 {
		ix.avgLen = 1
	}
	return ix
}

// Len returns the number of indexed documents.
func (ix *Index) Len() int { return len(ix.docs) }

// Search returns the k best documents for query, best first; k <= 0 means
// all that match. Only documents sharing at least one term with the query
// (or with the words related to its words) are returned. Equal scores are
// ordered by server name, then tool name, then the order given to
// [NewIndex].
func (ix *Index) Search(query string, k int) []Hit {
	terms, weight := queryTerms(query)
	scores := make([]float64, len(ix.docs))
	matched := ix.score(scores, terms, weight, true)
	if len(matched) == 0 {
		return []Hit{}
	}
	// Feedback re-ranks what the query matched; it adds no documents.
	ix.score(scores, ix.feedback(best(scores, matched), weight), weight, false)

	better := ix.order(scores)
	all := matched
	if k > 0 && len(matched) > k {
		all = topK(matched, k, better)
	}
	slices.SortFunc(all, better)
	hits := make([]Hit, len(all))
	for i, d := range all {
		hits[i] = Hit{Doc: ix.docs[d], Score: scores[d]}
	}
	return hits
}

// score adds to scores the BM25 score of each document for terms, each
// term's share multiplied by its weight, and returns the documents that had
// no score before. Unless widen, only documents with a score already gain.
func (ix *Index) score(scores []float64, terms []string, weight map[string]float64, widen bool) (matched []int32) {
	for _, t := range terms {
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := ix.idf(len(ps))
		for _, p := range ps {
			if scores[p.doc] == 0 {
				if !widen {
					continue
				}
				matched = append(matched, p.doc)
			}
			tf := float64(p.tf)
			norm := k1 * (1 - b + b*float64(ix.lens[p.doc])/ix.avgLen)
			scores[p.doc] += weight[t] * idf * tf * (k1 + 1) / (tf + norm)
		}
	}
	return matched
}

func (ix *Index) idf(df int) float64 {
	n, d := float64(len(ix.docs)), float64(df)
	return math.Log(1 + (n-d+0.5)/(d+0.5))
}

// best returns the matched documents with the highest score: one, unless
// several tie.
func best(scores []float64, matched []int32) []int32 {
	top := slices.MaxFunc(matched, func(x, y int32) int { return cmp.Compare(scores[x], scores[y]) })
	var out []int32
	for _, d := range matched {
		if scores[d] == scores[top] {
			out = append(out, d)
		}
	}
	return out
}

// feedback returns the rarest feedbackTerms terms that all of docs (the
// best documents) hold and the query does not, and sets their weight to
// feedbackWeight. Taking only the terms that documents tied at the top share
// keeps equal documents equal.
func (ix *Index) feedback(docs []int32, weight map[string]float64) []string {
	var add []string
	for _, t := range ix.terms[docs[0]] {
		if _, ok := weight[t]; ok {
			continue
		}
		if !slices.ContainsFunc(docs[1:], func(d int32) bool { _, found := slices.BinarySearch(ix.terms[d], t); return !found }) {
			add = append(add, t)
		}
	}
	slices.SortStableFunc(add, func(x, y string) int { return cmp.Compare(len(ix.postings[x]), len(ix.postings[y])) })
	add = add[:min(feedbackTerms, len(add))]
	for _, t := range add {
		weight[t] = feedbackWeight
	}
	return add
}

// order returns how documents rank under scores: higher first, then by
// server name, tool name and the order given to [NewIndex].
func (ix *Index) order(scores []float64) func(x, y int32) int {
	return func(x, y int32) int {
		if c := cmp.Compare(scores[y], scores[x]); c != 0 {
			return c
		}
		dx, dy := &ix.docs[x], &ix.docs[y]
		if c := cmp.Compare(dx.Server, dy.Server); c != 0 {
			return c
		}
		if c := cmp.Compare(dx.Tool, dy.Tool); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	}
}

// topK returns the k best of docs (unordered), keeping a heap whose root is
// the worst of the best seen so far.
func topK(docs []int32, k int, order func(x, y int32) int) []int32 {
	h := slices.Clone(docs[:k])
	worse := func(i, j int) bool { return order(h[i], h[j]) > 0 }
	down := func(i int) {
		for {
			w := i
			if l := 2*i + 1; l < k && worse(l, w) {
				w = l
			}
			if r := 2*i + 2; r < k && worse(r, w) {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, d := range docs[k:] {
		if order(d, h[0]) < 0 {
			h[0] = d
			down(0)
		}
	}
	return h
}
