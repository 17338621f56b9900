package main

import (
	"slices"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestStdioSpareOnlyAfterLoss: with the default settings a stdio codebridge
// holds its session's container and no idle spare; once a reset took the
// session's container, one spare waits beside the new one.
func TestStdioSpareOnlyAfterLoss(t *testing.T) {
	requirePodman(t)
	cs, _, cmd := sessionProc(t, bridgeEnv(t, t.TempDir()))
	pid := cmd.Process.Pid
	if r := runPython(t, cs, map[string]any{"code": "print(1)"}); r.IsError || r.Out.Stdout != "1\n" {
		t.Fatalf("first run: %s", r.Text)
	}
	first := containersOf(t, pid)
	if len(first) != 1 {
		t.Fatalf("after the first run: containers %v, want the session's alone", first)
	}
	for range 2 {
		before := containersOf(t, pid)
		if r := runPython(t, cs, map[string]any{"code": "print(2)", "reset": true}); r.IsError || r.Out.Stdout != "2\n" {
			t.Fatalf("reset: %s", r.Text)
		}
		// The reset removes the session's container; the new session starts
		// on the spare when there is one, which a new spare replaces.
		testenv.Eventually(t, "the reset session's container gone and a spare beside the new one", func() bool {
			ids := containersOf(t, pid)
			kept := len(slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !slices.Contains(before, id) }))
			return len(ids) == 2 && kept == len(before)-1
		})
	}
}
