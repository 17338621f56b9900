package host

import (
	"fmt"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// TestPoolErrorAuthRequired: a server that needs a sign-in, whether found
// when it starts or on a call, is auth_required to the sandbox, with the
// message that names codebridge login, not the start error around it.
func TestPoolErrorAuthRequired(t *testing.T) {
	srv := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}
	need := &oauth.AuthRequiredError{Server: "hosted", Reason: "no sign-in is stored"}
	for _, err := range []error{
		&pool.StartError{Server: "hosted", Err: fmt.Errorf("calling \"initialize\": %w", need)},
		fmt.Errorf("calling \"tools/call\": rejected by transport: %w", need),
	} {
		e := poolError(srv, err).(*protocol.Error)
		if e.Code != protocol.CodeAuthRequired || e.Message != need.Error() || !strings.Contains(e.Message, "codebridge login hosted") {
			t.Errorf("poolError(%v) = %s %q; want auth_required naming codebridge login hosted", err, e.Code, e.Message)
		}
	}
}
