package bridgetest

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Blob is the content of the binary resource of [CatalogServer].
var Blob = []byte{0, 1, 2, 0xff}

// CatalogServer returns an MCP server with resources, a resource template
// and a prompt besides one tool:
//   - test://text, "hello", text/plain;
//   - test://blob, [Blob], application/octet-stream;
//   - test://pair, two text contents, "one" and "two";
//   - the template test://item/{id}, which reads as "item <id>";
//   - the prompt "greet" with a required argument "name", whose one user
//     message is "Hello, <name>!".
func CatalogServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "test"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
		})
	read := func(contents ...*mcp.ResourceContents) mcp.ResourceHandler {
		return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: contents}, nil
		}
	}
	s.AddResource(&mcp.Resource{URI: "test://text", Name: "text", MIMEType: "text/plain", Description: "a greeting"},
		read(&mcp.ResourceContents{URI: "test://text", MIMEType: "text/plain", Text: "hello"}))
	s.AddResource(&mcp.Resource{URI: "test://blob", Name: "blob", MIMEType: "application/octet-stream"},
		read(&mcp.ResourceContents{URI: "test://blob", MIMEType: "application/octet-stream", Blob: Blob}))
	s.AddResource(&mcp.Resource{URI: "test://pair", Name: "pair"},
		read(&mcp.ResourceContents{URI: "test://pair#1", Text: "one"}, &mcp.ResourceContents{URI: "test://pair#2", Text: "two"}))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://item/{id}", Name: "item"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, "test://item/")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "item " + id}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "greets someone", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "a greeting", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"}},
			}}, nil
		})
	return s
}
