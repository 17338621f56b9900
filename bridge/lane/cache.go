package lane

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// searchTTL is how long a client may keep the search lane's listings
// (SEP-2549's ttlMs): its three tools are fixed while codebridge runs.
const searchTTL = 10 * time.Minute

// toolsCacheHints sets the caching hints of the tools lane's results
// ([mcp.ServerOptions.SetCacheable]). Its listings are the same for every
// client but change with every reload, approval and quarantine (list_changed
// tells the clients with a session), so they are stale at once (ttlMs 0) and
// any cache may hold them (public). A read passes on a downstream server's
// resource, which codebridge cannot tell is the same for everyone (it may be
// read as the operator's sign-in), so only the asker's client may keep it
// (private), unless the server said otherwise.
func toolsCacheHints(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if c.CacheScope != "" {
		return
	}
	c.TTLMs, c.CacheScope = 0, "public"
	if _, ok := req.(*mcp.ReadResourceRequest); ok {
		c.CacheScope = "private"
	}
}

// searchCacheHints sets the caching hints of the search lane's listings:
// fixed, the same for every client.
func searchCacheHints(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
	if c.CacheScope == "" {
		c.TTLMs, c.CacheScope = int(searchTTL.Milliseconds()), "public"
	}
}
