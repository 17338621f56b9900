package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// TestPeerPolicy: "elicitation": false and "sampling": false refuse the
// server's requests, naming the setting and its file; otherwise they go to
// the run's session, which refuses what its client did not declare.
func TestPeerPolicy(t *testing.T) {
	h := &host{ask: elicit.NewSession(nil)}
	for _, tt := range []struct {
		name           string
		srv            *discovery.Server
		elicit, sample string // the error wanted
	}{
		{"refused", &discovery.Server{Name: "s", Source: "/home/u/MCPs/s.json", NoElicitation: true, NoSampling: true},
			`"elicitation": false in /home/u/MCPs/s.json`, `"sampling": false in /home/u/MCPs/s.json`},
		{"not declared", &discovery.Server{Name: "s"}, "did not declare", "did not declare"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := h.peer(tt.srv)
			if _, err := p.Elicit(t.Context(), &mcp.ElicitParams{Message: "?"}); err == nil || !strings.Contains(err.Error(), tt.elicit) {
				t.Errorf("Elicit: %v, want an error saying %s", err, tt.elicit)
			}
			if _, err := p.CreateMessage(t.Context(), &mcp.CreateMessageParams{}); err == nil || !strings.Contains(err.Error(), tt.sample) {
				t.Errorf("CreateMessage: %v, want an error saying %s", err, tt.sample)
			}
		})
	}
	if _, err := h.peer(&discovery.Server{Name: "s"}).ListRoots(t.Context()); !errors.Is(err, elicit.ErrNotDeclared) {
		t.Errorf("ListRoots: %v, want ErrNotDeclared", err)
	}
	if (&host{}).peer(&discovery.Server{Name: "s"}) != nil {
		t.Error("a run without an MCP session has a peer")
	}
}

// TestPeerPrincipal: the peers of runs of one MCP session, including the
// copies of its session made for each run's tool call (Via), name the same
// principal; those of another MCP session a different one.
func TestPeerPrincipal(t *testing.T) {
	srv := &discovery.Server{Name: "s"}
	one, other := elicit.NewSession(nil), elicit.NewSession(nil)
	run1 := (&host{ask: one}).peer(srv)
	run2 := (&host{ask: one.Via(nil)}).peer(srv)
	run3 := (&host{ask: other}).peer(srv)
	if run1.Principal() == "" || run1.Principal() != run2.Principal() {
		t.Errorf("runs of one MCP session: principals %q and %q, want one, not empty", run1.Principal(), run2.Principal())
	}
	if run1.Principal() == run3.Principal() {
		t.Errorf("runs of two MCP sessions share principal %q", run1.Principal())
	}
}
