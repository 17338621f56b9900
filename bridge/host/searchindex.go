package host

import (
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/typed"
	"github.com/codebridge-mcp/codebridge/discovery/search"
)

// searchIndex is the index of the tools the last search_tool_docs saw, kept
// while the listings hand out the same tools: the pool and the manifests
// keep one listing until the server lists again. Building the index of
// 5,000 tools takes tens of milliseconds, ranking them tens of microseconds.
type searchIndex struct {
	mu   sync.Mutex // protects following
	keys []searchKey
	ix   *search.Index
}

// searchKey is one document of the index: a listed tool, by identity, or a
// saved helper, by its text.
type searchKey struct {
	server            string
	tool              *mcp.Tool // nil for a saved helper
	name, description string    // a saved helper's
}

// index returns the index of keys, built again only when keys differ from
// the last call's.
func (c *searchIndex) index(keys []searchKey) *search.Index {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ix != nil && slices.Equal(c.keys, keys) {
		return c.ix
	}
	docs := make([]search.Doc, len(keys))
	for i, k := range keys {
		if k.tool == nil {
			docs[i] = search.Doc{Server: k.server, Tool: k.name, Description: k.description}
			continue
		}
		docs[i] = search.Doc{Server: k.server, Tool: k.tool.Name, Description: k.tool.Description, Params: typed.ParamNames(k.tool)}
	}
	c.keys, c.ix = keys, search.NewIndex(docs)
	return c.ix
}
