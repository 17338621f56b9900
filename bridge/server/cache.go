package server

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listTTL is how long a client may keep codebridge's listings (ttlMs of
// server/discover, tools/list, resources/list, resources/templates/list,
// prompts/list and resources/read, SEP-2549). What they list, run_python
// with the limits it was built with, the manual and no prompts, is fixed
// while codebridge runs; the bound is for the restart that changes it, which
// a client speaking 2026-07-28 (no session to lose) would not otherwise notice.
const listTTL = 10 * time.Minute

// cacheHints sets the caching hints of every result that has them
// ([mcp.ServerOptions.SetCacheable]). The code lane's listings are the same
// for every client, so any cache may keep them ("public"); a result whose
// handler already chose a scope keeps its own, as one must that depends on
// who asks ("private").
func cacheHints(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
	if c.CacheScope != "" {
		return
	}
	c.TTLMs = int(listTTL / time.Millisecond)
	c.CacheScope = "public"
}
