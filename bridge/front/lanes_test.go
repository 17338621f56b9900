package front

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/server"
)

// TestLanes: a request that SetLanes' pick sends to another lane opens its
// MCP session on that lane's server; those sessions count toward
// MaxMCPSessions, and the idlest of them is closed to make room as the
// code lane's are.
func TestLanes(t *testing.T) {
	f, url := serveFront(t, 2)
	other := mcp.NewServer(&mcp.Implementation{Name: "other"}, nil)
	mcp.AddTool(other, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
	})
	f.SetLanes(func(r *http.Request) *mcp.Server {
		if r.URL.Query().Get("lane") == "other" {
			return other
		}
		return nil
	}, other)

	lane := dial(t, url+"?lane=other", "2025-11-25")
	if res, err := lane.ListTools(t.Context(), nil); err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "hello" {
		t.Fatalf("tools of the other lane: %v %+v", err, res)
	}
	code := dial(t, url, "2025-11-25")
	if res, err := code.ListTools(t.Context(), nil); err != nil || len(res.Tools) != 1 || res.Tools[0].Name != server.ToolName {
		t.Fatalf("tools of the code lane: %v %+v", err, res)
	}
	if n := f.sessions(); n != 2 {
		t.Errorf("%d MCP sessions counted, want 2: one per lane", n)
	}
	postsDone(t, f)
	// The lane's session was used first: a third client closes it.
	third := dial(t, url, "2025-11-25")
	if _, err := third.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := lane.ListTools(t.Context(), nil); err == nil {
		t.Error("the other lane's idlest session was not closed to make room")
	}
}
