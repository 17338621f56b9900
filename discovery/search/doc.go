// Package search ranks tool documentation against a free-text query with
// BM25F, the index behind search_tool_docs.
//
// Each tool is a [Doc]: its server's name, its name, its description and its
// parameters' names. [Tokenize] splits them into terms: identifiers break on
// snake_case, camelCase, kebab-case and dots; words are lower-cased, stop
// words dropped (the, of, and the words that only say how a request is
// worded: want, need, could) and plurals folded; Chinese text, written
// without spaces, gives the overlapping pairs of its characters, so a
// two-character word of a query matches a Chinese description.
//
// A term in a tool's name counts three times, in its server's name twice, in
// a parameter name one and a half times, and in the description once; the
// weighted counts go through BM25 (k1 1.2, b 0.75), so a query like "sum of
// two numbers" finds the tool named get-sum before tools that only mention
// numbers.
//
// A query also looks for the words related to its own (related.go: general
// tool vocabulary such as photo/image/picture, delete/remove, slide/deck,
// with the common Chinese translations), each counting 0.4 of a word the
// query holds, so the query's own words rank first.
//
// Then the documents that matched are ranked again with the five rarest
// terms of the best one added at 0.3 (pseudo-relevance feedback from the
// first hit): tools that do the same thing describe it with the same words,
// and a server's tools share its name, so the best match lifts the tools the
// query's wording missed. Feedback reorders; it adds no documents.
//
// Quality is measured, not guessed: TestRetrieval scores the search on a
// golden set of graded queries over the 527 tools of LiveMCPTool
// (testdata/golden; metrics in package [searcheval]):
//
//	go test ./discovery/search -run TestRetrieval -v
//
// Only the dev half of the golden set is used to choose what the ranking
// does; the test half says how well it does.
package search
