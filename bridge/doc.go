// Package bridge is codebridge's composition root: [New] builds an [App]
// from the settings, each part once: the stores of the state folder, the
// sandbox (runtime/sandbox over a container engine driver), the pool of
// downstream MCP servers (bridge/pool), the watched configuration
// (discovery), the host side of the sandbox protocol (bridge/host) and the
// MCP server (bridge/server). cmd/codebridge serves the App over stdio
// ([App.ServeStdio]) or HTTP ([App.ServeHTTP] with a bridge/front it bound
// first), runs code once ([App.Exec]), and stops it with [App.Shutdown],
// whose context carries the budget. The commands that start servers only to
// list their tools work on a [Listing] (its pool, stores and configuration;
// [Listing.Doctor] checks the sandbox too); cmd/codebridge prints what they
// find. [Login] and [Logout] sign in to a server and out.
//
// It knows the engine drivers under runtime/ (runtime/podman, runtime/docker,
// runtime/kube) only through the small driver interface it declares in
// engine.go, which each driver's Engine implements; newEngine is the one
// place that chooses a driver by name.
package bridge
