package pool

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// catalogPool is a pool of two in-process servers: "rich", a
// [bridgetest.CatalogServer], and "plain", with tools only.
func catalogPool(t *testing.T) (*Pool, *atomic.Int32) {
	t.Helper()
	var starts atomic.Int32
	p := newTestPool(t, Options{})
	p.testTransport = func(def *discovery.Server) (mcp.Transport, error) {
		starts.Add(1)
		s := newTestServer(def.Name, nil, nil)
		if def.Name == "rich" {
			s = bridgetest.CatalogServer(def.Name)
		}
		ct, st := mcp.NewInMemoryTransports()
		if _, err := s.Connect(t.Context(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	disabled := memDef("off")
	disabled.Disabled = true
	p.Update([]*discovery.Server{memDef("rich"), memDef("plain"), disabled})
	return p, &starts
}

// TestCatalog: resources, templates and prompts come from the warm session,
// which the first of them starts.
func TestCatalog(t *testing.T) {
	p, starts := catalogPool(t)
	ctx := t.Context()

	res, err := p.Resources(ctx, "rich")
	if err != nil || len(res) != 3 {
		t.Fatalf("Resources = %v, %v; want 3", res, err)
	}
	tmpl, err := p.ResourceTemplates(ctx, "rich")
	if err != nil || len(tmpl) != 1 || tmpl[0].URITemplate != "test://item/{id}" {
		t.Fatalf("ResourceTemplates = %v, %v", tmpl, err)
	}
	text, err := p.ReadResource(ctx, "rich", "test://text")
	if err != nil || len(text.Contents) != 1 || text.Contents[0].Text != "hello" {
		t.Fatalf("ReadResource(text) = %+v, %v", text, err)
	}
	blob, err := p.ReadResource(ctx, "rich", "test://blob")
	if err != nil || len(blob.Contents) != 1 || !bytes.Equal(blob.Contents[0].Blob, bridgetest.Blob) {
		t.Fatalf("ReadResource(blob) = %+v, %v", blob, err)
	}
	item, err := p.ReadResource(ctx, "rich", "test://item/7")
	if err != nil || item.Contents[0].Text != "item 7" {
		t.Fatalf("ReadResource(template) = %+v, %v", item, err)
	}
	prompts, err := p.Prompts(ctx, "rich")
	if err != nil || len(prompts) != 1 || prompts[0].Name != "greet" {
		t.Fatalf("Prompts = %v, %v", prompts, err)
	}
	got, err := p.GetPrompt(ctx, "rich", "greet", map[string]string{"name": "Ada"})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("GetPrompt = %+v, %v", got, err)
	}
	if tc, ok := got.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Hello, Ada!" {
		t.Errorf("prompt message = %#v", got.Messages[0].Content)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("starts = %d, want 1", n)
	}
}

func TestCatalogErrors(t *testing.T) {
	p, _ := catalogPool(t)
	ctx := t.Context()
	tests := []struct {
		name    string
		do      func() error
		wantIs  error
		wantMsg string
	}{
		{name: "no resources", do: func() error { _, err := p.Resources(ctx, "plain"); return err },
			wantIs: ErrUnsupported, wantMsg: `MCP server "plain" does not offer resources`},
		{name: "no templates", do: func() error { _, err := p.ResourceTemplates(ctx, "plain"); return err },
			wantIs: ErrUnsupported, wantMsg: "does not offer resources"},
		{name: "no read", do: func() error { _, err := p.ReadResource(ctx, "plain", "test://text"); return err },
			wantIs: ErrUnsupported, wantMsg: "does not offer resources"},
		{name: "no prompts", do: func() error { _, err := p.Prompts(ctx, "plain"); return err },
			wantIs: ErrUnsupported, wantMsg: `MCP server "plain" does not offer prompts`},
		{name: "no get", do: func() error { _, err := p.GetPrompt(ctx, "plain", "greet", nil); return err },
			wantIs: ErrUnsupported, wantMsg: "does not offer prompts"},
		{name: "unknown resource", do: func() error { _, err := p.ReadResource(ctx, "rich", "test://nope"); return err },
			wantMsg: `reading resource "test://nope" of MCP server "rich": `},
		{name: "unknown prompt", do: func() error { _, err := p.GetPrompt(ctx, "rich", "nope", nil); return err },
			wantMsg: `getting prompt "nope" of MCP server "rich": `},
		{name: "disabled", do: func() error { _, err := p.Resources(ctx, "off"); return err }, wantIs: ErrDisabled},
		{name: "unknown server", do: func() error { _, err := p.Prompts(ctx, "who"); return err }, wantIs: ErrUnknownServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if err == nil || tt.wantIs != nil && !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %v, want %v containing %q", err, tt.wantIs, tt.wantMsg)
			}
		})
	}
}

// TestCatalogTimeout: a read the server does not answer ends at the call
// timeout, saying so.
func TestCatalogTimeout(t *testing.T) {
	p := newTestPool(t, Options{CallTimeout: 50 * time.Millisecond})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	p.testTransport = func(def *discovery.Server) (mcp.Transport, error) {
		s := mcp.NewServer(&mcp.Implementation{Name: def.Name, Version: "test"}, nil)
		s.AddResource(&mcp.Resource{URI: "test://slow", Name: "slow"},
			func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, ctx.Err()
			})
		ct, st := mcp.NewInMemoryTransports()
		if _, err := s.Connect(t.Context(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	p.Update([]*discovery.Server{memDef("slow")})
	_, err := p.ReadResource(t.Context(), "slow", "test://slow")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Errorf("err = %v, want a timeout", err)
	}
}
