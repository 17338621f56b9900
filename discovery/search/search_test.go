package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"get-sum", []string{"get", "sum"}},
		{"create_entities", []string{"create", "entity"}},
		{"getHTTPStatus", []string{"get", "http", "status"}},
		{"HTTPServer", []string{"http", "server"}},
		{"server.everything", []string{"server", "everything"}},
		{"base64Encode", []string{"base", "64", "encode"}},
		{"v2", []string{"v", "2"}},
		{"Returns the sum of two numbers", []string{"return", "sum", "two", "number"}},
		{"Echoes back the input", []string{"echo", "back", "input"}},
		{"processes matches boxes classes", []string{"process", "match", "box", "class"}},
		{"status analysis bus", []string{"status", "analysis", "bus"}},
		{"MCP_TINY_IMAGE", []string{"mcp", "tiny", "image"}},
		{"trigger-long-running-operation", []string{"trigger", "long", "running", "operation"}},
		{"  ", nil},
		{"the of a", nil},
		{"Größe ändern", []string{"größe", "ändern"}},
		{"查询12306中转余票", []string{"查询", "12306", "中转", "转余", "余票"}},
		{"Ant Design 组件的 API属性", []string{"ant", "design", "组件", "件的", "api", "属性"}},
		{"汤", []string{"汤"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Tokenize(tt.in)); diff != "" {
				t.Errorf("Tokenize(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// testDocs are shaped like the tools of @modelcontextprotocol/server-everything,
// server-memory and server-filesystem.
var testDocs = []Doc{
	{Server: "everything", Tool: "echo", Description: "Echoes back the input", Params: []string{"message"}},
	{Server: "everything", Tool: "get-sum", Description: "Returns the sum of two numbers", Params: []string{"a", "b"}},
	{Server: "everything", Tool: "get-env", Description: "Returns all environment variables, helpful for debugging MCP server configuration"},
	{Server: "everything", Tool: "trigger-long-running-operation", Description: "Demonstrates a long running operation with progress updates", Params: []string{"duration", "steps"}},
	{Server: "everything", Tool: "get-tiny-image", Description: "Returns the MCP_TINY_IMAGE"},
	{Server: "everything", Tool: "trigger-sampling-request", Description: "Samples from an LLM using MCP's sampling feature", Params: []string{"prompt", "maxTokens"}},
	{Server: "everything", Tool: "get-annotated-message", Description: "Demonstrates how annotations can be used to provide metadata about content", Params: []string{"messageType", "includeImage"}},
	{Server: "everything", Tool: "get-resource-links", Description: "Returns multiple resource links that reference different types of resources", Params: []string{"count"}},
	{Server: "everything", Tool: "get-structured-content", Description: "Returns structured content along with an output schema for client data validation", Params: []string{"location"}},
	{Server: "everything", Tool: "gzip-file-as-resource", Description: "Compresses a single file using gzip compression", Params: []string{"name", "data", "outputType"}},
	{Server: "memory", Tool: "create_entities", Description: "Create multiple new entities in the knowledge graph", Params: []string{"entities"}},
	{Server: "memory", Tool: "create_relations", Description: "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice", Params: []string{"relations"}},
	{Server: "memory", Tool: "add_observations", Description: "Add new observations to existing entities in the knowledge graph", Params: []string{"observations"}},
	{Server: "memory", Tool: "delete_entities", Description: "Delete multiple entities and their associated relations from the knowledge graph", Params: []string{"entityNames"}},
	{Server: "memory", Tool: "delete_observations", Description: "Delete specific observations from entities in the knowledge graph", Params: []string{"deletions"}},
	{Server: "memory", Tool: "delete_relations", Description: "Delete multiple relations from the knowledge graph", Params: []string{"relations"}},
	{Server: "memory", Tool: "read_graph", Description: "Read the entire knowledge graph"},
	{Server: "memory", Tool: "search_nodes", Description: "Search for nodes in the knowledge graph based on a query", Params: []string{"query"}},
	{Server: "memory", Tool: "open_nodes", Description: "Open specific nodes in the knowledge graph by their names", Params: []string{"names"}},
	{Server: "filesystem", Tool: "read_text_file", Description: "Read the complete contents of a file from the file system as text", Params: []string{"path", "head", "tail"}},
	{Server: "filesystem", Tool: "write_file", Description: "Create a new file or completely overwrite an existing file with new content", Params: []string{"path", "content"}},
	{Server: "filesystem", Tool: "list_directory", Description: "Get a detailed listing of all files and directories in a specified path", Params: []string{"path"}},
	{Server: "filesystem", Tool: "search_files", Description: "Recursively search for files and directories matching a pattern", Params: []string{"path", "pattern", "excludePatterns"}},
}

func TestSearchRanking(t *testing.T) {
	ix := NewIndex(testDocs)
	tests := []struct {
		query string
		first string // "server/tool"
	}{
		{"sum of two numbers", "everything/get-sum"},
		{"add two numbers", "everything/get-sum"},
		{"create entities in knowledge graph", "memory/create_entities"},
		{"echo", "everything/echo"},
		{"environment variables", "everything/get-env"},
		{"long running operation with progress", "everything/trigger-long-running-operation"},
		{"tiny image", "everything/get-tiny-image"},
		{"read the whole graph", "memory/read_graph"},
		{"search nodes", "memory/search_nodes"},
		{"delete relations", "memory/delete_relations"},
		{"read a file", "filesystem/read_text_file"},
		{"list directory contents", "filesystem/list_directory"},
		{"compress with gzip", "everything/gzip-file-as-resource"},
		{"SearchFiles pattern", "filesystem/search_files"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			hits := ix.Search(tt.query, 3)
			if len(hits) == 0 {
				t.Fatalf("Search(%q) found nothing", tt.query)
			}
			if got := hits[0].Doc.Server + "/" + hits[0].Doc.Tool; got != tt.first {
				t.Errorf("Search(%q) ranks %s first, want %s; hits:\n%s", tt.query, got, tt.first, format(hits))
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Errorf("hits not sorted by score:\n%s", format(hits))
				}
			}
		})
	}
}

func format(hits []Hit) string {
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "  %6.3f %s/%s\n", h.Score, h.Doc.Server, h.Doc.Tool)
	}
	return b.String()
}

func TestSearchLimitsAndEdges(t *testing.T) {
	ix := NewIndex(testDocs)
	if got := ix.Len(); got != len(testDocs) {
		t.Errorf("Len() = %d, want %d", got, len(testDocs))
	}
	if hits := ix.Search("knowledge graph", 2); len(hits) != 2 {
		t.Errorf("k=2 returned %d hits", len(hits))
	}
	if hits := ix.Search("knowledge graph", 0); len(hits) != 9 {
		t.Errorf("k=0 returned %d hits, want all 9 memory tools", len(hits))
	}
	for _, q := range []string{"", "the of", "xyzzy"} {
		if hits := ix.Search(q, 5); len(hits) != 0 {
			t.Errorf("Search(%q) = %v, want no hits", q, hits)
		}
	}
	// The server's name matches all its tools.
	hits := ix.Search("memory", 0)
	if len(hits) != 9 {
		t.Errorf("Search(memory) returned %d hits, want 9", len(hits))
	}
	if empty := NewIndex(nil); len(empty.Search("anything", 3)) != 0 {
		t.Error("empty index returned hits")
	}
}

func TestSearchTiesAreDeterministic(t *testing.T) {
	docs := []Doc{
		{Server: "beta", Tool: "ping", Description: "Ping the host"},
		{Server: "alpha", Tool: "ping", Description: "Ping the host"},
		{Server: "alpha", Tool: "ping", Description: "Ping the host"}, // duplicate: index order
		{Server: "gamma", Tool: "other", Description: "unrelated"},
	}
	want := []string{"alpha/ping", "alpha/ping", "beta/ping"}
	for range 20 {
		hits := NewIndex(docs).Search("ping", 0)
		var got []string
		for _, h := range hits {
			got = append(got, h.Doc.Server+"/"+h.Doc.Tool)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("tie order (-want +got):\n%s", diff)
		}
		if hits[0].Score != hits[2].Score {
			t.Fatalf("equal docs scored differently: %v", hits)
		}
	}
}

// benchDocs makes n tools with descriptions drawn from a fixed vocabulary.
func benchDocs(n int) []Doc {
	r := rand.New(rand.NewPCG(1, 2))
	var vocab []string
	for _, d := range testDocs {
		vocab = append(vocab, strings.Fields(d.Description)...)
	}
	word := func() string { return vocab[r.IntN(len(vocab))] }
	docs := make([]Doc, n)
	for i := range docs {
		var desc []string
		for range 8 + r.IntN(20) {
			desc = append(desc, word())
		}
		docs[i] = Doc{
			Server:      fmt.Sprintf("server%d", i%200),
			Tool:        fmt.Sprintf("%s_%s_%d", word(), word(), i),
			Description: strings.Join(desc, " "),
			Params:      []string{word(), word()},
		}
	}
	return docs
}

func BenchmarkNewIndex10k(b *testing.B) {
	docs := benchDocs(10_000)
	b.ReportAllocs()
	for b.Loop() {
		NewIndex(docs)
	}
}

func BenchmarkSearch10k(b *testing.B) {
	ix := NewIndex(benchDocs(10_000))
	b.ReportAllocs()
	for b.Loop() {
		ix.Search("create entities in knowledge graph", 10)
	}
}

func TestSearchTopKMatchesFullRanking(t *testing.T) {
	ix := NewIndex(benchDocs(2000))
	for _, q := range []string{"create entities in knowledge graph", "file", "resource links", "sum numbers"} {
		all := ix.Search(q, 0)
		for _, k := range []int{1, 2, 5, 17, 100, len(all), len(all) + 3} {
			want := all[:min(k, len(all))]
			if diff := cmp.Diff(want, ix.Search(q, k)); diff != "" {
				t.Fatalf("Search(%q, %d) differs from the first %d of all hits (-want +got):\n%s", q, k, k, diff)
			}
		}
	}
}

func TestSearchRelatedWords(t *testing.T) {
	docs := []Doc{
		{Server: "fs", Tool: "unlink", Description: "Remove a file"},
		{Server: "fs", Tool: "erase_all", Description: "Delete every file"},
		{Server: "img", Tool: "shot", Description: "Take a picture of the screen"},
		{Server: "misc", Tool: "other", Description: "Something unrelated"},
	}
	ix := NewIndex(docs)
	var got []string
	for _, h := range ix.Search("delete a file", 0) {
		got = append(got, h.Doc.Tool)
	}
	// The word itself ranks before its related word ("remove").
	if diff := cmp.Diff([]string{"erase_all", "unlink"}, got); diff != "" {
		t.Errorf("Search(delete a file) (-want +got):\n%s", diff)
	}
	if hits := ix.Search("photo", 0); len(hits) != 1 || hits[0].Doc.Tool != "shot" {
		t.Errorf("Search(photo) = %v, want the tool that takes a picture", hits)
	}
	if related["photo"] == nil || !slices.Contains(related["photo"], "image") {
		t.Errorf("related[photo] = %v, want it to hold image", related["photo"])
	}
	for t0, us := range related {
		if slices.Contains(us, t0) {
			t.Errorf("%s is related to itself", t0)
		}
	}
}

// TestRelatedGroupsWords checks the words of the related groups: a stop word
// would silently drop out of its group, an English word that splits
// ("web3" gives web and 3) would tie its groups to a common word, and a
// group written twice is one idea in two places.
func TestRelatedGroupsWords(t *testing.T) {
	seen := map[string]int{}
	for i, g := range relatedGroups {
		var terms []string
		for _, w := range strings.Fields(g) {
			ts := Tokenize(w)
			if len(ts) == 0 {
				t.Errorf("group %q: %q is a stop word; drop it", g, w)
			}
			if !isHan([]rune(w)[0]) && len(ts) > 1 {
				t.Errorf("group %q: %q splits into %v; write its parts or drop it", g, w, ts)
			}
			terms = append(terms, ts...)
		}
		slices.Sort(terms)
		key := strings.Join(slices.Compact(terms), " ")
		if j, ok := seen[key]; ok {
			t.Errorf("groups %d and %d hold the same words: %q", j, i, key)
		}
		seen[key] = i
	}
}

func TestSearchFeedbackFromTheFirstHit(t *testing.T) {
	docs := []Doc{
		{Server: "meteo", Tool: "forecast", Description: "Weather forecast by city name"},
		{Server: "meteo", Tool: "alerts", Description: "Severe weather alerts for a region"},
		{Server: "news", Tool: "headlines", Description: "Weather headlines"},
		{Server: "geo", Tool: "city_lookup", Description: "Find a city by name"},
	}
	var got []string
	for _, h := range NewIndex(docs).Search("weather forecast", 0) {
		got = append(got, h.Doc.Server+"/"+h.Doc.Tool)
	}
	// news/headlines, shorter, would rank before meteo/alerts on "weather"
	// alone; the first hit's terms (meteo) lift its sibling. geo/city_lookup
	// shares only feedback terms (city, name) and is not returned.
	want := []string{"meteo/forecast", "meteo/alerts", "news/headlines"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Search(weather forecast) (-want +got):\n%s", diff)
	}
}
