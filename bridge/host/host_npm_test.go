//go:build !windows

package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestArgumentLimitKeepsServerAlive sends server-everything, a TypeScript SDK
// server over stdio, an argument over the ~10 MiB its SDK accepts: codebridge
// must refuse it itself, so the server (which every run shares) survives.
func TestArgumentLimitKeepsServerAlive(t *testing.T) {
	p := pool.New(pool.Options{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 20*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	cfg := &discovery.Config{Servers: []*discovery.Server{{Name: "everything", Transport: discovery.Stdio, Command: testenv.NPMBin(t, "mcp-server-everything")}}}
	p.Update(cfg.Servers)
	d := newDirectory(p, 4<<20, nil)
	d.setting = envName
	d.Update(cfg)
	h := d.host(Run{})

	echo := func(msg string) (any, error) {
		return hostCall(t, h, "call_tool", map[string]any{"server": "everything", "tool": "echo", "arguments": map[string]any{"message": msg}})
	}
	pid := func() int {
		for _, st := range p.Status() {
			if st.Name == "everything" && st.State == pool.StateRunning {
				return st.PID
			}
		}
		return 0
	}
	if _, err := echo("before"); err != nil {
		t.Fatal(err)
	}
	before := pid()
	if before == 0 {
		t.Fatalf("server-everything is not running after a call: %+v", p.Status())
	}

	_, err := echo(strings.Repeat("x", 20<<20))
	var re *protocol.Error
	if !errors.As(err, &re) || re.RPCCode() != "bad_arguments" || !strings.Contains(re.Error(), "MCP_BRIDGE_MAX_ARGUMENT_SIZE") {
		t.Fatalf("20 MiB argument: err = %v, want bad_arguments naming MCP_BRIDGE_MAX_ARGUMENT_SIZE", err)
	}
	t.Logf("refused with: %s", re.Error())

	v, err := echo("after")
	if err != nil {
		t.Fatalf("the server no longer answers after the refused call: %v", err)
	}
	if !strings.Contains(toJSON(t, v), "Echo: after") {
		t.Errorf("echo after the refused call = %s", toJSON(t, v))
	}
	if after := pid(); after != before {
		t.Errorf("server-everything was PID %d before the refused call and is %d after: it was restarted", before, after)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
