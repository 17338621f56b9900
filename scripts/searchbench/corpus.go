package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery/search/searcheval"
)

// corpusServer returns an MCP server that lists exactly the tools of the
// corpus's server named server, in the corpus's order, each with its name,
// description and input schema verbatim (the schema's JSON bytes as the
// corpus holds them).
//
// It is a stand-in for the real server, for measuring search only: calling
// any of its tools does nothing and answers the text "called NAME". The
// tools are added with [mcp.Server.AddTool], which takes a raw schema and
// validates nothing against it; a tool it refuses (it panics on a schema
// whose type is not "object") is an error naming the tool, never skipped.
func corpusServer(corpus []searcheval.Tool, server string, logger *slog.Logger) (*mcp.Server, error) {
	var tools []searcheval.Tool
	for _, t := range corpus {
		if t.Server == server {
			tools = append(tools, t)
		}
	}
	if len(tools) == 0 {
		return nil, fmt.Errorf("the corpus has no server %q: name one of its servers (the \"server\" of its tools)", server)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: server, Version: "corpus"}, &mcp.ServerOptions{Logger: logger})
	for _, t := range tools {
		if err := addTool(s, t); err != nil {
			return nil, fmt.Errorf("server %q: %w", server, err)
		}
	}
	return s, nil
}

// addTool adds t to s with a handler answering "called NAME", turning the
// SDK's panic on a schema it refuses into an error.
func addTool(s *mcp.Server, t searcheval.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the SDK refuses tool %q: %v", t.Tool, r)
		}
	}()
	if len(t.InputSchema) == 0 {
		return fmt.Errorf("tool %q has no inputSchema: the corpus must give every tool one", t.Tool)
	}
	text := "called " + t.Tool
	s.AddTool(&mcp.Tool{Name: t.Tool, Description: t.Description, InputSchema: t.InputSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	return nil
}

// serve runs the stand-in for one server of the corpus file over stdio
// until its client goes away.
func serve(ctx context.Context, corpusPath, server string) error {
	corpus, err := searcheval.LoadCorpus(corpusPath)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := corpusServer(corpus, server, logger)
	if err != nil {
		return err
	}
	return s.Run(ctx, &mcp.StdioTransport{})
}

// mustJSON is v as JSON; v is always marshalable here.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
