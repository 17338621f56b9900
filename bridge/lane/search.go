package lane

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Search is the search lane: three tools for clients that cannot hold
// every downstream tool, answered as run_python's helpers are:
// find_tools by search_tool_docs's search, describe_tool by
// query_tool_docs, call_tool by the one call path of every tool call.
type Search struct {
	dir    Directory
	logger *slog.Logger
	srv    *mcp.Server
	sess   sessions
}

// The search lane's tool names.
const (
	FindTools    = "find_tools"
	DescribeTool = "describe_tool"
	CallTool     = "call_tool"
)

type findInput struct {
	Query string `json:"query" jsonschema:"what the tool should do, in a few words"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many tools to return; default 5"`
}

type describeInput struct {
	Server string `json:"server" jsonschema:"the tool's server, as find_tools gives it"`
	Tool   string `json:"tool" jsonschema:"the tool's name, as find_tools gives it"`
}

type callInput struct {
	Server    string         `json:"server" jsonschema:"the tool's server, as find_tools gives it"`
	Tool      string         `json:"tool" jsonschema:"the tool's name, as find_tools gives it"`
	Arguments map[string]any `json:"arguments,omitempty" jsonschema:"the tool's arguments, an object as its input schema (describe_tool) says"`
}

// NewSearch builds the search lane.
func NewSearch(opts Options) *Search {
	s := &Search{dir: opts.Dir, logger: orDiscard(opts.Logger), sess: sessions{onClient: opts.OnClient, lane: "search"}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "codebridge", Title: "codebridge (search)", Version: opts.Version},
		&mcp.ServerOptions{SetCacheable: searchCacheHints, Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	mcp.AddTool(s.srv, &mcp.Tool{Name: FindTools, Description: "Search the tools of every configured MCP server by what they do. " +
		"Returns the best matches with their server, name and one-line description; describe_tool gives one's input schema, call_tool calls it."}, s.find)
	mcp.AddTool(s.srv, &mcp.Tool{Name: DescribeTool, Description: "The full description and input schema of one tool that find_tools returned."}, s.describe)
	mcp.AddTool(s.srv, &mcp.Tool{Name: CallTool, Description: "Call one tool of a configured MCP server with its arguments; returns the tool's own result."}, s.call)
	return s
}

// MCP is the lane's go-sdk server.
func (s *Search) MCP() *mcp.Server { return s.srv }

// Close waits for what the lane started.
func (s *Search) Close() { s.sess.wg.Wait() }

// hit is one result of find_tools.
type hit struct {
	Server      string   `json:"server"`
	Tool        string   `json:"tool"`
	Description string   `json:"description"`
	Score       *float64 `json:"score,omitempty"`
	Listed      string   `json:"listed,omitempty"`
}

func (s *Search) find(ctx context.Context, req *mcp.CallToolRequest, in findInput) (*mcp.CallToolResult, any, error) {
	h := hostFor(ctx, s.dir, s.sess.of(req.Session), req, nil)
	res, err := h.SearchToolDocs(ctx, protocol.SearchToolDocsParams{Query: in.Query, Limit: in.Limit, Detail: "summary"})
	if err != nil {
		return refusal(err), nil, nil
	}
	out := struct {
		Results     []hit                  `json:"results"`
		Unavailable []protocol.Unavailable `json:"unavailable,omitempty"`
	}{Results: []hit{}, Unavailable: res.Unavailable}
	for _, d := range res.Results {
		if d.Server == "saved_tools" { // helpers of the sandbox, not tools to call here
			continue
		}
		out.Results = append(out.Results, hit{Server: d.Server, Tool: d.Tool, Description: d.Description, Score: d.Score, Listed: d.Listed})
	}
	return jsonResult(out), nil, nil
}

func (s *Search) describe(ctx context.Context, req *mcp.CallToolRequest, in describeInput) (*mcp.CallToolResult, any, error) {
	h := hostFor(ctx, s.dir, s.sess.of(req.Session), req, nil)
	docs, err := h.QueryToolDocs(ctx, protocol.QueryToolDocsParams{Server: in.Server, Tool: &in.Tool, Detail: "full"})
	if err != nil {
		return refusal(err), nil, nil
	}
	type described struct {
		Server       string `json:"server"`
		Tool         string `json:"tool"`
		Description  string `json:"description"`
		InputSchema  any    `json:"inputSchema,omitempty"`
		OutputSchema any    `json:"outputSchema,omitempty"`
		Listed       string `json:"listed,omitempty"`
	}
	var out []described
	for _, d := range docs {
		out = append(out, described{d.Server, d.Tool, d.Description, d.InputSchema, d.OutputSchema, d.Listed})
	}
	if len(out) == 1 {
		return jsonResult(out[0]), nil, nil
	}
	return jsonResult(out), nil, nil
}

func (s *Search) call(ctx context.Context, req *mcp.CallToolRequest, in callInput) (*mcp.CallToolResult, any, error) {
	h := hostFor(ctx, s.dir, s.sess.of(req.Session), req, req.Params.GetProgressToken())
	args, err := json.Marshal(in.Arguments)
	if err != nil {
		return nil, nil, err
	}
	res, err := callTool(ctx, h, in.Server, in.Tool, args)
	return res, nil, err
}

// jsonResult is v as a tool result's text.
func jsonResult(v any) *mcp.CallToolResult {
	raw, _ := json.Marshal(v)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}}
}
