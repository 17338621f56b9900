package lane

import (
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCacheHints: the lanes' listings carry the caching hints chosen for
// them, and the tools lane's reads of downstream resources are private.
func TestCacheHints(t *testing.T) {
	r := newRig(t, manifest.New(t.TempDir()))
	tools := NewTools(Options{Dir: r.dir})
	t.Cleanup(tools.Close)
	search := NewSearch(Options{Dir: r.dir})
	t.Cleanup(search.Close)
	for _, tt := range []struct {
		name string
		srv  *mcp.Server
		want mcp.Cacheable
	}{
		{"tools", tools.MCP(), mcp.Cacheable{TTLMs: 0, CacheScope: "public"}},
		{"search", search.MCP(), mcp.Cacheable{TTLMs: int(searchTTL.Milliseconds()), CacheScope: "public"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := connect(t, tt.srv, nil).ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Cacheable != tt.want {
				t.Errorf("tools/list hints %+v, want %+v", res.Cacheable, tt.want)
			}
		})
	}
	var read mcp.Cacheable
	toolsCacheHints(t.Context(), &mcp.ReadResourceRequest{}, &read)
	if want := (mcp.Cacheable{TTLMs: 0, CacheScope: "private"}); read != want {
		t.Errorf("resources/read hints %+v, want %+v", read, want)
	}
	kept := mcp.Cacheable{TTLMs: 5000, CacheScope: "public"}
	toolsCacheHints(t.Context(), &mcp.ReadResourceRequest{}, &kept)
	if want := (mcp.Cacheable{TTLMs: 5000, CacheScope: "public"}); kept != want {
		t.Errorf("a server's own hints became %+v, want %+v kept", kept, want)
	}
}
