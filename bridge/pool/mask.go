package pool

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// maskedError is an error whose message has a server's secrets masked; it
// unwraps to the error it masks, for [errors.Is] and [errors.As].
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// masked returns err with def's secrets masked in its message: an HTTP
// transport's errors quote the URL, which may hold a ${keyring:...} token.
func masked(def *discovery.Server, err error) error {
	if err == nil || len(def.Secrets) == 0 {
		return err
	}
	msg := err.Error()
	if m := def.Secrets.Mask(msg); m != msg {
		return &maskedError{msg: m, err: err}
	}
	return err
}

// maskTools returns tools with def's secrets masked in their definitions, so
// a server that quotes its token in a description does not put it in the
// docs code reads, nor in a saved manifest.
func maskTools(def *discovery.Server, tools []*mcp.Tool) []*mcp.Tool {
	if len(def.Secrets) == 0 {
		return tools
	}
	for i, t := range tools {
		raw, err := json.Marshal(t)
		if err != nil {
			continue
		}
		if m, changed := def.Secrets.MaskJSON(raw); changed {
			var out mcp.Tool
			if json.Unmarshal(m, &out) == nil {
				tools[i] = &out
			}
		}
	}
	return tools
}
