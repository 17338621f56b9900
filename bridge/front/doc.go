// Package front is codebridge's streamable HTTP front: it serves the MCP
// server over HTTP with the checks a network listener needs (bearer token,
// Host and Origin checks, a limit on sessions), a health endpoint, a request
// log, and a shutdown that lets runs in progress finish.
//
// The composition root binds the address first ([Listen]), then builds the
// MCP server and hands it to [Front.Serve]; [Front.Shutdown] stops it.
package front
