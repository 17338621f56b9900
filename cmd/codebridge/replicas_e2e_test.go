package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestSharedStateAcrossReplicas: several codebridge replicas (real
// processes, started at the same moment) share one state directory, as the
// replicas of a Deployment share a volume, and their sessions write at once:
// memories, one counter every session updates, saved helpers, tool calls
// recorded in an audit log small enough to rotate many times, and the tool
// list of the server each replica starts (its manifest, its pins, the
// manifests' key). Nothing may be lost or torn: every memory and helper is
// there whole, the counter counts every update, the audit files hold every
// call as a whole line, one manifest key, one token.
func TestSharedStateAcrossReplicas(t *testing.T) {
	const replicas, clients, rounds = 3, 2, 20
	cfgDir, state := t.TempDir(), t.TempDir()
	writeServers(t, cfgDir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")}})
	env := append(bridgeEnv(t, cfgDir), "MCP_BRIDGE_STATE_DIR="+state, "MCP_BRIDGE_LOG_LEVEL=info",
		"MCP_BRIDGE_AUDIT_MAX_SIZE=4k", "MCP_BRIDGE_AUDIT_KEEP=100", "MCP_BRIDGE_WARM_CONTAINERS=0")

	bridges := make([]*httpBridge, replicas)
	for i := range bridges {
		bridges[i] = launchHTTP(t, env) // at once: they race to make the token too
	}
	for _, b := range bridges {
		b.waitListening(t)
		if b.Token != bridges[0].Token {
			t.Fatalf("replicas on one state directory serve different tokens")
		}
	}

	code := func(r, c int) string {
		return fmt.Sprintf(`
def helper(x):
    """Adds one."""
    return x + 1
for k in range(%[3]d):
    save_memory(f"m-%[1]d-%[2]d-{k}", {"r": %[1]d, "c": %[2]d, "k": k, "pad": "x" * 3000}, metadata={"k": k})
    update_memory("counter", lambda n: (n or 0) + 1)
    save_tool(helper, name=f"h_%[1]d_%[2]d_{k}")
    await call_tool("everything", "echo", {"message": f"%[1]d-%[2]d-{k}"})
print("done")`, r, c, rounds)
	}
	var wg sync.WaitGroup
	errs := make(chan error, replicas*clients)
	for r, b := range bridges {
		for c := range clients {
			cs, err := b.dial(b.Token)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			wg.Go(func() {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code(r, c), "timeout": 300}})
				switch {
				case err != nil:
					errs <- fmt.Errorf("replica %d client %d: %v", r, c, err)
				case res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "done"):
					errs <- fmt.Errorf("replica %d client %d: %+v", r, c, res.Content)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	st := memory.New(state)
	mems, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	if want := replicas*clients*rounds + 1; len(mems) != want {
		t.Errorf("%d memories, want %d", len(mems), want)
	}
	for r := range replicas {
		for c := range clients {
			for k := range rounds {
				m, found, err := st.Load(fmt.Sprintf("m-%d-%d-%d", r, c, k))
				var v struct{ R, C, K int }
				if err != nil || !found || json.Unmarshal(m.Value, &v) != nil || v.R != r || v.C != c || v.K != k || string(m.Metadata) != fmt.Sprintf(`{"k":%d}`, k) {
					t.Errorf("memory m-%d-%d-%d: found %v, %v, %s %s", r, c, k, found, err, m.Value[:min(len(m.Value), 40)], m.Metadata)
				}
			}
		}
	}
	if m, _, err := st.Load("counter"); err != nil || string(m.Value) != fmt.Sprint(replicas*clients*rounds) {
		t.Errorf("counter = %s (%v), want %d: updates were lost", m.Value, err, replicas*clients*rounds)
	}
	tools, err := st.Tools()
	if err != nil || len(tools) != replicas*clients*rounds {
		t.Errorf("%d saved helpers (%v), want %d", len(tools), err, replicas*clients*rounds)
	}

	// The audit log: every call once, every line whole, over many rotations.
	files, err := audit.Files(audit.Dir(state))
	if err != nil {
		t.Fatal(err)
	}
	echoes := map[string]int{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var rec audit.Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Errorf("%s: a torn line %q: %v", filepath.Base(f), sc.Text(), err)
				continue
			}
			if rec.Tool == "echo" && rec.Outcome == audit.OutcomeOK {
				echoes[fmt.Sprintf("%s/%d", rec.Session, rec.Run)]++
			}
		}
		fh.Close()
	}
	total := 0
	for _, n := range echoes {
		total += n
	}
	if len(files) < 3 || total != replicas*clients*rounds {
		t.Errorf("%d audit files with %d echo calls, want several files and %d calls", len(files), total, replicas*clients*rounds)
	}

	// The manifest every replica saved is valid for all: one key, one file.
	conf := discovery.Load(cfgDir, nil, discovery.Options{})
	ms := manifest.New(manifest.Dir(state))
	if m, ok := ms.Load(conf.Servers[0]); !ok || len(m.Tools) == 0 {
		t.Errorf("the manifest of everything is missing or made with another key than the folder's")
	}
	if p, ok, err := ms.LoadPins("everything"); err != nil || !ok || len(p.Tools) == 0 || len(p.Quarantined) > 0 {
		t.Errorf("pins of everything: %v %v %+v", ok, err, p)
	}
	leftovers, _ := filepath.Glob(filepath.Join(state, "*", ".tmp-*"))
	more, _ := filepath.Glob(filepath.Join(state, "manifests", "*", ".manifest-*"))
	if len(leftovers)+len(more) > 0 {
		t.Errorf("temporary files left: %v %v", leftovers, more)
	}
}
