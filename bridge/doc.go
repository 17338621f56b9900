// Package bridge is codebridge's composition root: it wires the sandbox
// (runtime/sandbox over runtime/podman), the pool of downstream MCP servers
// (bridge/pool), the watched configuration (discovery) and the host side of the
// sandbox protocol (bridge/host) into the MCP server (bridge/server), and
// offers what cmd/codebridge runs: [Serve] over stdio, [ListenAndServe] over
// HTTP (bridge/front), [Exec], [ListServers] and [Doctor].
package bridge
