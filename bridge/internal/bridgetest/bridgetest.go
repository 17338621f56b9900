// Package bridgetest holds test helpers shared by the tests of several
// packages under bridge.
package bridgetest

import (
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
	"testing"

	"encoding/json"
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
