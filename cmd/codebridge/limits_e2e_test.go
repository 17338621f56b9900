package main

import (
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestLimitsFollowImageEndToEnd: with the minimal image, which has none of
// the data libraries the default settings preload, codebridge starts with
// the bounds that count a preload's cost and, after the first run shows
// the image lacks them, serves with the bounds of sessions that preload
// nothing (the ones MCP_BRIDGE_PRELOAD= gives), max_queued following.
func TestLimitsFollowImageEndToEnd(t *testing.T) {
	img := testenv.MinimalImage()
	testenv.RequireImage(t, img)
	dir := t.TempDir()
	hb := startHTTP(t, bridgeEnv(t, dir, "MCP_BRIDGE_IMAGE="+img))
	_, before := hb.health(t)
	preloadOff, err := settings.LoadConfig([]string{"MCP_BRIDGE_PRELOAD="}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if before.MaxSessions >= preloadOff.MaxSessions {
		t.Fatalf("before any run: max_sessions %d, want the preloading bound, under %d", before.MaxSessions, preloadOff.MaxSessions)
	}
	cs := hb.goClient(t, hb.Token)
	if r := runPython(t, cs, map[string]any{"code": "import importlib.util\nprint(importlib.util.find_spec('numpy'))"}); r.IsError || r.Out.Stdout != "None\n" {
		t.Fatalf("the minimal image has numpy, or the run failed: %s", r.Text)
	}
	_, after := hb.health(t)
	if after.MaxSessions != preloadOff.MaxSessions || after.MaxQueued != preloadOff.MaxQueued || after.MaxRuns != preloadOff.MaxRuns {
		t.Errorf("after a run in the minimal image: max_sessions %d, max_queued %d, max_runs %d; want %d, %d, %d (as MCP_BRIDGE_PRELOAD= gives)",
			after.MaxSessions, after.MaxQueued, after.MaxRuns, preloadOff.MaxSessions, preloadOff.MaxQueued, preloadOff.MaxRuns)
	}
	t.Logf("max_sessions %d → %d, max_queued %d → %d", before.MaxSessions, after.MaxSessions, before.MaxQueued, after.MaxQueued)
}
