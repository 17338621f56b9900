package front

import (
	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"strings"
	"testing"
)

// TestPrintUsageHidesKeptToken: on a start that did not make the token (or
// whose stderr is not a terminal), the usage names the token's file, never
// the token, which would end up in journald or kubectl logs.
func TestPrintUsageHidesKeptToken(t *testing.T) {
	const token, path = "TOKEN-abcdefghijklmnopqrstuvwxyz", "/state/http-token"
	var b strings.Builder
	printUsage(&b, "http://127.0.0.1:8080/mcp", true, token, path, false, testOptions(bridgetest.Config(t)).Setting)
	if strings.Contains(b.String(), token) || !strings.Contains(b.String(), path) {
		t.Errorf("usage:\n%s\nwant the file %s named and the token not shown", b.String(), path)
	}
}

// TestPrintUsageShowsNewToken: a token made just now, for a terminal, is shown.
func TestPrintUsageShowsNewToken(t *testing.T) {
	const token, path = "TOKEN-abcdefghijklmnopqrstuvwxyz", "/state/http-token"
	var b strings.Builder
	printUsage(&b, "http://127.0.0.1:8080/mcp", true, token, path, true, testOptions(bridgetest.Config(t)).Setting)
	if !strings.Contains(b.String(), token) {
		t.Errorf("usage:\n%s\nwant the new token shown", b.String())
	}
}
