package bridgetest

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Agent connects an agent's client, configured by opts and speaking protocol
// version, to a new in-memory codebridge server session and returns that
// session; both end with the test.
func Agent(t *testing.T, version string, opts *mcp.ClientOptions) *mcp.ServerSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcp.NewServer(&mcp.Implementation{Name: "codebridge"}, nil).Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, opts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return ss
}
