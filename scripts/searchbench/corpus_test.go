package main

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/search/searcheval"
)

const corpusFile = "../../discovery/search/testdata/livemcptool/tools.json"

// TestCorpusServers serves every server of the LiveMCPTool corpus over the
// SDK's in-memory transport and checks that a client lists exactly its
// tools, name, description and input schema as the corpus has them, and
// that a call answers.
func TestCorpusServers(t *testing.T) {
	corpus, err := searcheval.LoadCorpus(corpusFile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]searcheval.Tool{}
	var order []string
	for _, tool := range corpus {
		if want[tool.Server] == nil {
			order = append(order, tool.Server)
		}
		want[tool.Server] = append(want[tool.Server], tool)
	}
	if len(order) != 70 || len(corpus) != 527 {
		t.Fatalf("the corpus has %d tools of %d servers, want 527 of 70", len(corpus), len(order))
	}
	var logged strings.Builder // the SDK logs what it finds wrong with a tool, e.g. its name
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	listed := 0
	for _, name := range order {
		s, err := corpusServer(corpus, name, logger)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		cs := connect(t, s)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatalf("%s: listing tools: %v", name, err)
		}
		var got, exp []map[string]any
		for _, tool := range res.Tools {
			got = append(got, map[string]any{"name": tool.Name, "description": tool.Description, "inputSchema": tool.InputSchema})
		}
		for _, tool := range want[name] {
			var schema any
			if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
				t.Fatalf("%s: %v", tool.Key(), err)
			}
			exp = append(exp, map[string]any{"name": tool.Tool, "description": tool.Description, "inputSchema": schema})
		}
		// The SDK lists tools sorted by name; the corpus is sorted too.
		if diff := cmp.Diff(exp, got); diff != "" {
			t.Errorf("%s: tools/list differs from the corpus (-corpus +listed):\n%s", name, diff)
		}
		listed += len(res.Tools)
		first := want[name][0].Tool
		call, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: first, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: calling %s: %v", name, first, err)
		}
		if len(call.Content) != 1 || call.IsError {
			t.Fatalf("%s: calling %s: got %s, want one text", name, first, mustJSON(call))
		}
		if text := call.Content[0].(*mcp.TextContent).Text; text != "called "+first {
			t.Errorf("%s: calling %s answered %q, want %q", name, first, text, "called "+first)
		}
	}
	if listed != len(corpus) {
		t.Errorf("listed %d tools in all, want %d", listed, len(corpus))
	}
	if logged.Len() > 0 {
		t.Errorf("the SDK logged problems with corpus tools:\n%s", logged.String())
	}
}

func TestCorpusServerUnknown(t *testing.T) {
	corpus := []searcheval.Tool{{Server: "a", Tool: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	if _, err := corpusServer(corpus, "b", nil); err == nil || !strings.Contains(err.Error(), `no server "b"`) {
		t.Errorf("unknown server: got %v, want an error naming it", err)
	}
	bad := []searcheval.Tool{{Server: "a", Tool: "x", InputSchema: json.RawMessage(`{"type":"string"}`)}}
	if _, err := corpusServer(bad, "a", nil); err == nil || !strings.Contains(err.Error(), `refuses tool "x"`) {
		t.Errorf("a schema the SDK refuses: got %v, want an error naming the tool", err)
	}
}

// connect connects a client to s over the SDK's in-memory transport.
func connect(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestWriteConfig checks that the config folder the benchmark writes loads
// in codebridge's discovery as one stdio server per corpus server, each
// starting this program's serve form for itself; with -copies 2 each
// server again as NAME-2, serving NAME's tools.
func TestWriteConfig(t *testing.T) {
	corpus, err := searcheval.LoadCorpus(corpusFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	want, err := writeConfig(dir, "/bin/searchbench", "/corpus.json", corpus, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := discovery.Load(dir, nil, discovery.Options{})
	if len(cfg.Problems) > 0 {
		t.Fatalf("the config folder has problems: %+v", cfg.Problems)
	}
	if len(want) != 140 || len(cfg.Servers) != len(want) {
		t.Fatalf("wrote %d servers, discovery loaded %d, want 140 (70, twice)", len(want), len(cfg.Servers))
	}
	for _, tool := range corpus {
		for _, name := range []string{tool.Server, tool.Server + "-2"} {
			s := cfg.Server(name)
			if s == nil {
				t.Fatalf("server %q not loaded", name)
			}
			args := []string{"serve", "-corpus", "/corpus.json", "-server", tool.Server}
			if s.Transport != discovery.Stdio || s.Command != "/bin/searchbench" || !slices.Equal(s.Args, args) {
				t.Errorf("server %q: %s %s %q, want stdio /bin/searchbench %q", name, s.Transport, s.Command, s.Args, args)
			}
			if !slices.Contains(want[name], tool.Tool) {
				t.Errorf("server %q: want lists %v, not its tool %q", name, want[name], tool.Tool)
			}
		}
	}
}
