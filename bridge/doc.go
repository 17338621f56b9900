// Package bridge is codebridge's composition root: it wires the sandbox
// (runtime/sandbox over a container engine driver), the pool of downstream
// MCP servers (bridge/pool), the watched configuration (discovery) and the
// host side of the sandbox protocol (bridge/host) into the MCP server
// (bridge/server), and offers what cmd/codebridge runs: [Serve] over stdio,
// [ListenAndServe] over HTTP (bridge/front), [Exec], [ListServers] and
// [Doctor].
//
// It knows the engine drivers under runtime/ (runtime/podman, runtime/docker,
// runtime/kube) only through the small driver interface it declares in
// engine.go, which each driver's Engine implements; newEngine is the one
// place that chooses a driver by name.
package bridge
