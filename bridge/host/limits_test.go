package host

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// TestCallsPerRunCap: a run's call past max_calls_per_run is refused with
// too_many_calls, unsent, naming the cap and its setting; a refused call
// (an unknown tool) counts; the next run starts from none; 0 is no cap.
func TestCallsPerRunCap(t *testing.T) {
	fp := &recordingPool{}
	d := newDirectory(fp, 0, nil)
	d.setting, d.maxCalls = envName, 3
	d.Update(&discovery.Config{Servers: []*discovery.Server{{Name: "s", Transport: discovery.Streamable, URL: "http://127.0.0.1:1/mcp"}}})
	call := func(h *host, tool string) error {
		_, err := hostCall(t, h, "call_tool", map[string]any{"server": "s", "tool": tool, "arguments": map[string]any{}})
		return err
	}

	h := d.host(Run{})
	if err := call(h, "nope"); protocol.CodeOf(err) != protocol.CodeUnknownTool {
		t.Fatalf("unknown tool: %v", err)
	}
	for i := range 2 {
		if err := call(h, "echo"); err != nil {
			t.Fatalf("call %d of 3: %v", i+2, err)
		}
	}
	err := call(h, "echo")
	const want = "this run has made 3 tool calls, the most a run may make (MCP_BRIDGE_MAX_CALLS_PER_RUN), so this one was not sent: " +
		"batch the work into fewer calls (a tool that takes many items at once), or go on in the next run; " +
		"the person running codebridge can raise MCP_BRIDGE_MAX_CALLS_PER_RUN"
	if protocol.CodeOf(err) != protocol.CodeTooManyCalls || err.Error() != want {
		t.Fatalf("call 4 of a run capped at 3: code %s, %v\nwant too_many_calls, %s", protocol.CodeOf(err), err, want)
	}
	if n := len(fp.callSizes()); n != 2 {
		t.Errorf("%d calls reached the server, want 2", n)
	}
	if err := call(d.host(Run{}), "echo"); err != nil {
		t.Errorf("the first call of the next run: %v", err)
	}

	d.maxCalls = 0
	h = d.host(Run{})
	for i := range 10 {
		if err := call(h, "echo"); err != nil {
			t.Fatalf("call %d without a cap: %v", i+1, err)
		}
	}
}

// busyPool refuses every call as a pool whose server is busy does.
type busyPool struct {
	recordingPool
	err *pool.BusyError
}

func (f *busyPool) CallFor(context.Context, pool.Peer, string, string, any, func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	return nil, f.err
}

// TestBusyNamesLimits: a call the pool refuses as busy reaches code as
// busy, naming the server, its limits, and the settings that raise them:
// the entry's "maxConcurrency" where it has one, else server_concurrency.
func TestBusyNamesLimits(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  pool.BusyError
		want string
	}{
		{name: "entry's limit", err: pool.BusyError{Server: "s", Source: "/cfg/s.json", Concurrency: 2, Configured: true, Queue: 512},
			want: `MCP server "s" is busy, so this call was not sent: 2 tool calls are in flight on it, the most it is given at once ("maxConcurrency" in its entry in /cfg/s.json), ` +
				`and 512 more are waiting, the most that may wait (MCP_BRIDGE_SERVER_QUEUE). Await some of the calls before sending more (e.g. an asyncio.Semaphore around them), ` +
				`or try again later; the person running codebridge can raise MCP_BRIDGE_SERVER_QUEUE, or "maxConcurrency" in its entry in /cfg/s.json`},
		{name: "default limit", err: pool.BusyError{Server: "s", Source: "/cfg/s.json", Concurrency: 16, Queue: 256},
			want: `MCP server "s" is busy, so this call was not sent: 16 tool calls are in flight on it, the most it is given at once (MCP_BRIDGE_SERVER_CONCURRENCY, as its entry in /cfg/s.json sets no "maxConcurrency"), ` +
				`and 256 more are waiting, the most that may wait (MCP_BRIDGE_SERVER_QUEUE). Await some of the calls before sending more (e.g. an asyncio.Semaphore around them), ` +
				`or try again later; the person running codebridge can raise MCP_BRIDGE_SERVER_QUEUE, or MCP_BRIDGE_SERVER_CONCURRENCY, or "maxConcurrency" in its entry in /cfg/s.json for this server alone`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDirectory(&busyPool{err: &tt.err}, 0, nil)
			d.setting = envName
			d.Update(&discovery.Config{Servers: []*discovery.Server{{Name: "s", Transport: discovery.Streamable, URL: "http://127.0.0.1:1/mcp"}}})
			_, err := hostCall(t, d.host(Run{}), "call_tool", map[string]any{"server": "s", "tool": "echo"})
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeBusy || pe.Message != tt.want {
				t.Fatalf("got %v\nwant busy: %s", err, tt.want)
			}
		})
	}
}
