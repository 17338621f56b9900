package bridge

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestTwoSessionsOneServer: two MCP sessions on one codebridge server never
// see each other's variables or files, and closing one removes its container
// while the other goes on. Real Podman, go-sdk in-memory transports.
func TestTwoSessionsOneServer(t *testing.T) {
	testenv.RequirePodmanBinary(t)
	cfg := defaultConfig(t)
	cfg.ConfigDir, cfg.StateDir, cfg.Image = t.TempDir(), t.TempDir(), testenv.Image()
	p, err := start(t.Context(), cfg, orDiscard(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	srv := NewServer(cfg, Options{Runner: p.sandbox, Servers: p.dir})

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
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"code": code}})
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

	a, _ := connect()
	b, _ := connect()
	const set = "import socket\nx = %q\nopen('/tmp/mark', 'w').write(%q)\nprint(socket.gethostname())"
	hostA, idA := run(a, strings.ReplaceAll(set, "%q", "'a'"))
	const look = "import os\nprint(globals().get('x'), open('/tmp/mark').read() if os.path.exists('/tmp/mark') else None)"
	if out, _ := run(b, look); out != "None None\n" {
		t.Errorf("session B sees A's state: %q", out)
	}
	hostB, idB := run(b, strings.ReplaceAll(set, "%q", "'b'"))
	if out, _ := run(a, look); out != "a a\n" {
		t.Errorf("session A after B wrote: %q", out)
	}
	if out, _ := run(b, look); out != "b b\n" {
		t.Errorf("session B: %q", out)
	}
	if idA == idB || hostA == hostB {
		t.Errorf("the sessions share a sandbox: %s/%s, %s/%s", idA, idB, hostA, hostB)
	}

	// Closing A's connection ends its sandbox session and removes its container.
	a.Close()
	id := strings.TrimSpace(hostA)
	deadline := time.Now().Add(60 * time.Second)
	for exec.Command("podman", "container", "exists", id).Run() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("container %s of a closed session still exists after 60 s", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, idB2 := run(b, look); out != "b b\n" || idB2 != idB {
		t.Errorf("session B after A closed: %q in %s (was %s)", out, idB2, idB)
	}
}
