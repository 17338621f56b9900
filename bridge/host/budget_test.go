package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// sizedPool answers every call with a text of the size its arguments ask.
type sizedPool struct{ recordingPool }

func (*sizedPool) CallFor(_ context.Context, _ pool.Peer, _, _ string, args any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	var in struct{ Size int }
	_ = json.Unmarshal(args.(json.RawMessage), &in)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.Size)}}}, nil
}

// TestResultBudget: a result over the whole budget is refused naming it; a
// result that does not fit while others hold the budget waits for room, and
// gives up with its context; a call's share is given back when it ends.
func TestResultBudget(t *testing.T) {
	d := New(&sizedPool{}, Options{ResultBudget: 4096})
	d.Update(&discovery.Config{Servers: []*discovery.Server{{Name: "s", Transport: discovery.Stdio, Command: "x"}}})
	h := d.host(Run{})
	call := func(ctx context.Context, size int) error {
		raw, _ := json.Marshal(map[string]any{"server": "s", "tool": "echo", "arguments": map[string]any{"size": size}})
		_, err := h.Call(ctx, protocol.MethodCallTool, raw)
		return err
	}
	var re *protocol.Error
	if err := call(t.Context(), 5000); !errors.As(err, &re) || re.Code != protocol.CodeTooLarge || !strings.Contains(err.Error(), "4 KiB of results") {
		t.Errorf("a result over the budget: %v, want too_large naming 4 KiB", err)
	}
	for range 10 { // each call gives its share back
		if err := call(t.Context(), 3000); err != nil {
			t.Fatalf("a result within the budget: %v", err)
		}
	}
	release, err := d.inflight.hold(t.Context(), 3000, "other", "call")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := call(ctx, 3000); err == nil || !strings.Contains(err.Error(), "waiting for room") {
		t.Errorf("a result that does not fit beside another: %v, want it to wait, then give up with its context", err)
	}
	release()
	if err := call(t.Context(), 3000); err != nil {
		t.Errorf("once the other result is released: %v", err)
	}
}
