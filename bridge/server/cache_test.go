package server

import (
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCacheHints checks the caching hints of each listing and of the
// manual's read: chosen by codebridge (listTTL, public), not the SDK's
// "stale at once" default.
func TestCacheHints(t *testing.T) {
	cs := connect(t, NewServer(testOptions(bridgetest.Config(t), Options{Runner: &fakeRunner{}})))
	ctx := t.Context()
	results := map[string]func() (mcp.Cacheable, error){
		"tools/list": func() (mcp.Cacheable, error) { r, err := cs.ListTools(ctx, nil); return hints(r, err) },
		"resources/list": func() (mcp.Cacheable, error) {
			r, err := cs.ListResources(ctx, nil)
			return hints(r, err)
		},
		"resources/templates/list": func() (mcp.Cacheable, error) {
			r, err := cs.ListResourceTemplates(ctx, nil)
			return hints(r, err)
		},
		"prompts/list": func() (mcp.Cacheable, error) { r, err := cs.ListPrompts(ctx, nil); return hints(r, err) },
		"resources/read": func() (mcp.Cacheable, error) {
			r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ManualURI})
			return hints(r, err)
		},
	}
	want := mcp.Cacheable{TTLMs: int(listTTL.Milliseconds()), CacheScope: "public"}
	for method, get := range results {
		got, err := get()
		if err != nil {
			t.Errorf("%s: %v", method, err)
			continue
		}
		if got != want {
			t.Errorf("%s: hints %+v, want %+v", method, got, want)
		}
	}
	if caps := cs.InitializeResult().Capabilities; caps.Prompts == nil {
		t.Errorf("capabilities %+v declare no prompts, but prompts/list is answered", caps)
	}
}

// hints returns r's caching hints.
func hints[R mcp.CacheableResult](r R, err error) (mcp.Cacheable, error) {
	if err != nil {
		return mcp.Cacheable{}, err
	}
	return mcp.Cacheable{TTLMs: r.GetTTLMs(), CacheScope: r.GetCacheScope()}, nil
}
