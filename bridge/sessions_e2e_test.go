package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/bridge/server"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestTwoSessionsOneServer: two MCP sessions on one codebridge server never
// see each other's variables or files, and closing one removes its container
// while the other goes on. Real Podman, go-sdk in-memory transports.
func TestTwoSessionsOneServer(t *testing.T) {
	testenv.RequireImage(t, testenv.Image())
	cfg := bridgetest.Config(t)
	cfg.ConfigDir, cfg.StateDir, cfg.Image, cfg.Engine = t.TempDir(), t.TempDir(), testenv.Image(), testenv.Engine()
	cfg.Runtime = testenv.Runtime()
	app, err := New(t.Context(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Shutdown(context.WithoutCancel(t.Context())) })
	srv := app.Server()

	connect := func() (*mcp.ClientSession, *mcp.ServerSession) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close(); ss.Close() })
		return cs, ss
	}
	run := func(cs *mcp.ClientSession, code string) (stdout string, sessionID string) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: server.ToolName, Arguments: map[string]any{"code": code}})
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Stdout  string
			Error   any
			Session struct{ ID string }
		}
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
		if out.Error != nil {
			t.Fatalf("run %q: %v", code, out.Error)
		}
		return out.Stdout, out.Session.ID
	}

	// Each session sets x and writes /tmp/<its name>; neither sees the other's.
	const set = "import socket\nx = %q\nopen('/tmp/' + x, 'w').write(x)\nprint(socket.gethostname())"
	const look = "import os\nprint(globals().get('x'), sorted(f for f in ('a', 'b') if os.path.exists('/tmp/' + f)))"
	a, _ := connect()
	b, _ := connect()
	hostA, idA := run(a, fmt.Sprintf(set, "a"))
	if out, _ := run(b, look); out != "None []\n" {
		t.Errorf("session B sees A's state: %q", out)
	}
	hostB, idB := run(b, fmt.Sprintf(set, "b"))
	if out, _ := run(a, look); out != "a ['a']\n" {
		t.Errorf("session A after B wrote: %q", out)
	}
	if out, _ := run(b, look); out != "b ['b']\n" {
		t.Errorf("session B: %q", out)
	}
	if idA == idB || hostA == hostB {
		t.Errorf("the sessions share a sandbox: %s/%s, %s/%s", idA, idB, hostA, hostB)
	}

	// Closing A's connection ends its sandbox session and removes its
	// container (the hostname is its short id: it exists until then).
	containerA := strings.TrimSpace(hostA)
	if !testenv.ContainerExists(t, containerA) {
		t.Fatalf("session A's hostname %q is not a live container", containerA)
	}
	a.Close()
	deadline := time.Now().Add(60 * time.Second)
	for testenv.ContainerExists(t, containerA) {
		if time.Now().After(deadline) {
			t.Fatalf("container %s of a closed session still exists after 60 s", containerA)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, idB2 := run(b, look); out != "b ['b']\n" || idB2 != idB {
		t.Errorf("session B after A closed: %q in %s (was %s)", out, idB2, idB)
	}
}
