// Package pool keeps one MCP client per configured downstream server: started on
// first use, exactly once, kept warm, stopped when idle or removed from the
// configuration, and restarted after a crash.
package pool
