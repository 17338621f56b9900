// Package bridgetest holds test helpers shared by the tests of several
// packages under bridge.
package bridgetest

import (
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
	"testing"

	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/settings"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// AttachParams is the attach request the sandbox sends for data, or for its
// size alone when data is nil.
func AttachParams(kind, name, mime string, data []byte, size int) json.RawMessage {
	p := protocol.AttachParams{Kind: kind, Name: name, MIMEType: mime, Data: data, Bytes: size}
	if data != nil {
		p.Bytes = len(data)
	}
	raw, _ := json.Marshal(p)
	return raw
}

// Config is the settings of an empty environment and no settings file: every
// default, but the container engine, which is the one the tests run against
// ([testenv.Engine]).
func Config(t *testing.T) settings.Config {
	t.Helper()
	c := settings.Defaults()
	c.Engine = testenv.Engine()
	return c
}

// Text is the text of a tool result's content blocks, one after another;
// "" for a nil result.
func Text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
