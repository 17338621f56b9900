package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// serversBelow lists the downstream servers running below codebridge: the
// processes whose command line names an npm MCP server.
func serversBelow(bridge int) []string {
	var out []string
	for _, pid := range descendants(bridge) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		for _, name := range []string{"mcp-server-everything", "mcp-server-memory", "mcp-server-filesystem"} {
			if strings.Contains(string(cmdline), name) && procStat(pid) != nil && procStat(pid)[0] != "Z" {
				out = append(out, name)
			}
		}
	}
	return out
}

// TestManifests: once codebridge servers --tools has listed every server,
// a new codebridge answers search and full docs from the saved tool lists
// without starting any server, says so in each doc, starts a server for a
// call, and never serves a saved list for a changed definition.
func TestManifests(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	servers := npmServers(t)
	writeServers(t, dir, "servers.json", servers)
	env := bridgeEnv(t, dir)

	if _, stderr, code := runCLI(t, env, "", "servers", "--tools"); code != 0 {
		t.Fatalf("servers --tools: exit %d\n%s", code, stderr)
	}
	var state string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "MCP_BRIDGE_STATE_DIR="); ok {
			state = v
		}
	}
	if files, _ := filepath.Glob(filepath.Join(state, "manifests", "*.json")); len(files) != 3 {
		t.Fatalf("manifests after servers --tools: %v; want one per server", files)
	}

	cs, _, cmd := sessionProcWith(t, env, nil)
	pid := cmd.Process.Pid
	out := mustRun(t, cs, `
hits = await search_tool_docs("create entities in the knowledge graph", limit=3)
print(hits[0]["server"], hits[0]["tool"])
print(all("tool list the server gave" in h["listed"] for h in hits))
docs = await query_tool_docs("everything", detail="full")
echo = next(d for d in docs if d["tool"] == "echo")
print(len(docs) > 5, "message" in echo["signature"], "tool list the server gave" in echo["listed"])
`)
	if want := "memory create_entities\nTrue\nTrue True True\n"; out != want {
		t.Errorf("search and docs from manifests printed %q; want %q", out, want)
	}
	if running := serversBelow(pid); len(running) != 0 {
		t.Errorf("servers started to answer search and docs: %v", running)
	}

	// A call starts the server; its docs then come from it.
	out = mustRun(t, cs, `
print(await mcp_everything.echo(message="hi"))
print((await query_tool_docs("everything", tool="echo")).get("listed", "live"))
`)
	if !strings.Contains(out, "hi") || !strings.HasSuffix(out, "live\n") {
		t.Errorf("after a call: %q; want the echo and a live listing", out)
	}
	if running := serversBelow(pid); len(running) != 1 || running[0] != "mcp-server-everything" {
		t.Errorf("servers running after one call: %v; want everything", running)
	}

	// A changed definition of memory: its saved list no longer applies, so
	// docs start it and come from it.
	memory := servers["memory"].(map[string]any)
	memory["env"].(map[string]string)["CODEBRIDGE_TEST_CHANGED"] = "1"
	writeServers(t, dir, "servers.json", servers)
	testenv.Eventually(t, "the edited memory server is listed live", func() bool {
		out := mustRun(t, cs, `print((await query_tool_docs("memory", tool="create_entities")).get("listed", "live"))`)
		return out == "live\n"
	})
	found := false
	for _, s := range serversBelow(pid) {
		found = found || s == "mcp-server-memory"
	}
	if !found {
		t.Errorf("docs of the changed memory server did not start it: %v", serversBelow(pid))
	}

	// A server taken out of the config loses its manifest at the next
	// servers --tools.
	delete(servers, "memory")
	writeServers(t, dir, "servers.json", servers)
	stdout, stderr, code := runCLI(t, env, "", "servers", "--tools")
	if code != 0 || !strings.Contains(stdout, "removed the saved tool lists of servers no longer configured: memory\n") {
		t.Errorf("servers --tools after removing memory: exit %d\n%s%s", code, stdout, stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "manifests", "*.json")); len(files) != 2 {
		t.Errorf("manifests after removing memory: %v; want two", files)
	}
}

// BenchmarkFirstSearch is the first search_tool_docs of a new codebridge
// process with 3 and 30 configured servers (copies of server-memory), cold
// (no manifests: every server starts) and with the manifests a previous
// process saved. The time is the search alone, measured inside the sandbox;
// each iteration is a new codebridge process.
//
//	go test ./cmd/codebridge -run '^$' -bench FirstSearch -benchtime 5x
func BenchmarkFirstSearch(b *testing.B) {
	for _, n := range []int{3, 30} {
		b.Run(fmt.Sprintf("servers-%d/cold", n), func(b *testing.B) { benchFirstSearch(b, n, false) })
		b.Run(fmt.Sprintf("servers-%d/manifests", n), func(b *testing.B) { benchFirstSearch(b, n, true) })
	}
}

func benchFirstSearch(b *testing.B, n int, manifests bool) {
	requirePodman(b)
	dir := b.TempDir()
	servers := map[string]any{}
	for i := range n {
		servers[fmt.Sprintf("memory%02d", i)] = map[string]any{"command": testenv.NPMBin(b, "mcp-server-memory"),
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(b.TempDir(), "memory.jsonl")}}
	}
	writeServers(b, dir, "servers.json", servers)
	state := b.TempDir()
	if manifests {
		env := append(bridgeEnv(b, dir), "MCP_BRIDGE_STATE_DIR="+state)
		if _, stderr, code := runCLI(b, env, "", "servers", "--tools"); code != 0 {
			b.Fatalf("servers --tools: %s", stderr)
		}
	}
	var ds []time.Duration
	for b.Loop() {
		b.StopTimer()
		if !manifests {
			state = b.TempDir()
		}
		cs, _ := session(b, append(bridgeEnv(b, dir), "MCP_BRIDGE_STATE_DIR="+state))
		out := mustRun(b, cs, `
import time
t = time.perf_counter()
hits = await search_tool_docs("create entities", limit=3)
print(time.perf_counter() - t)
`)
		var secs float64
		if _, err := fmt.Sscan(out, &secs); err != nil {
			b.Fatalf("search printed %q", out)
		}
		ds = append(ds, time.Duration(secs*float64(time.Second)))
		cs.Close()
		b.StartTimer()
	}
	reportQuantiles(b, ds)
}
