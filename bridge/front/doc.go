// Package front is codebridge's streamable HTTP front: it serves the MCP
// server over HTTP with the checks a network listener needs (bearer token,
// Host and Origin checks, a limit on sessions), a health endpoint, a request
// log, and a shutdown that lets runs in progress finish.
package front

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/server"
)

// Backend is what [ListenAndServe] serves: the runner and servers behind the
// MCP server, and how to stop them.
type Backend struct {
	Runner  server.Runner
	Servers server.Directory // the configured MCP servers
	Close   func()           // stops what was started, and waits for it
	// OnClient receives each agent client's capabilities (see
	// server.Options.OnClient); nil ignores them.
	OnClient func(*mcp.ClientCapabilities)
	// Ready reports whether the sandbox answers, for the health endpoint;
	// nil leaves it out.
	Ready func(ctx context.Context) error
	// Engine names the container engine, for the health endpoint.
	Engine string
}

// Starter starts the [Backend], once the address is bound.
type Starter func(ctx context.Context) (Backend, error)
