package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pinServerEnv, set in its environment, makes the test binary a stdio MCP
// server with one tool, note, whose description is read from the file
// pinServerDescEnv names when it starts: a server whose tool definition
// changes between two starts. pinServerNameEnv, if set, names the tool
// instead. With pinServerRepeatEnv set to a description, it lists the tool
// twice: first with that description, then as it is. pinServerInstrEnv, if
// set, names a file whose text is the server's instructions.
const (
	pinServerEnv       = "CODEBRIDGE_TEST_PIN_SERVER"
	pinServerDescEnv   = "CODEBRIDGE_TEST_PIN_DESCRIPTION"
	pinServerNameEnv   = "CODEBRIDGE_TEST_PIN_NAME"
	pinServerRepeatEnv = "CODEBRIDGE_TEST_PIN_REPEAT"
	pinServerInstrEnv  = "CODEBRIDGE_TEST_PIN_INSTRUCTIONS"
)

// runPinServer serves note on stdin and stdout until stdin closes.
func runPinServer() {
	desc, err := os.ReadFile(os.Getenv(pinServerDescEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pin server:", err)
		os.Exit(2)
	}
	var opts *mcp.ServerOptions
	if path := os.Getenv(pinServerInstrEnv); path != "" {
		instr, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pin server:", err)
			os.Exit(2)
		}
		opts = &mcp.ServerOptions{Instructions: string(instr)}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "pin-test", Version: "1"}, opts)
	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: cmp.Or(os.Getenv(pinServerNameEnv), "note"), Description: strings.TrimSpace(string(desc))},
		func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "noted: " + a.Text}}}, nil, nil
		})
	if repeat := os.Getenv(pinServerRepeatEnv); repeat != "" {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if l, ok := res.(*mcp.ListToolsResult); ok && err == nil && len(l.Tools) > 0 {
					other := *l.Tools[0]
					other.Description = repeat
					l.Tools = append([]*mcp.Tool{&other}, l.Tools...)
				}
				return res, err
			}
		})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "pin server:", err)
	}
}
