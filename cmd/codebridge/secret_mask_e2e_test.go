//go:build linux

package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestEnvTokenMaskedEndToEnd: a server on loopback whose Authorization
// header comes from ${env:NAME} echoes that header back; sandboxed code that
// prints the result sees [secret], not the token.
func TestEnvTokenMaskedEndToEnd(t *testing.T) {
	requirePodman(t)
	const token = "e2e-env-token-5f4e3d2c"
	s := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Echoes the Authorization header."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "auth: " + req.Extra.Header.Get("Authorization")}}}, nil, nil
		})
	srv := testenv.ServeOn(t, "127.0.0.1:0", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	dir := t.TempDir()
	writeServers(t, dir, "echo.json", map[string]any{"echo": map[string]any{"url": srv.URL + "/mcp",
		"headers": map[string]string{"Authorization": "Bearer ${env:E2E_ECHO_TOKEN}"}}})
	cs, _ := session(t, bridgeEnv(t, dir, "E2E_ECHO_TOKEN="+token))
	out := mustRun(t, cs, `print(await call_tool("echo", "whoami", {}))`)
	if strings.Contains(out, token) || !strings.Contains(out, "auth: Bearer [secret]") && !strings.Contains(out, "auth: [secret]") {
		t.Errorf("the code printed %q: want the token masked", out)
	}
}
