//go:build linux

package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestResourcesAndPromptsEndToEnd: through the real sandbox, code lists and
// reads server-everything's resources (a text document, a blob from a
// template, the resource links a tool returns) and gets one of its prompts
// with arguments; a server whose policy denies every tool has its resources
// and prompts refused; reads and gets are audited with their kinds.
func TestResourcesAndPromptsEndToEnd(t *testing.T) {
	requirePodman(t)
	dir, state := t.TempDir(), t.TempDir()
	everything := testenv.NPMBin(t, "mcp-server-everything")
	writeServers(t, dir, "s.json", map[string]any{
		"everything": map[string]any{"command": everything},
		"closed":     map[string]any{"command": everything, "tools": map[string]any{"deny": []string{"*"}}},
	})
	cs, _ := session(t, append(bridgeEnv(t, dir), "MCP_BRIDGE_STATE_DIR="+state))

	out := mustRun(t, cs, `
res = await mcp_everything.list_resources()
doc = [r for r in res if r["uri"].endswith("/architecture.md")][0]
text = await mcp_everything.read_resource(doc)
print("text", type(text).__name__, doc["mimeType"], len(text) > 100)
print("templates", sorted(t["uriTemplate"] for t in list_resource_templates_sync("everything")))
blob = read_resource_sync("everything", "demo://resource/dynamic/blob/7")
print("blob", type(blob).__name__, blob.decode().startswith("Resource 7:"))
links = await call_tool("everything", "get-resource-links", {"count": 2}, raw=True)
print("links", sorted(type(read_resource_sync("everything", b)).__name__ for b in links["content"] if b["type"] == "resource_link"))
print("prompts", "args-prompt" in [p["name"] for p in await mcp_everything.list_prompts()])
p = await get_prompt("everything", "args-prompt", {"city": "Paris", "state": "TX"})
print("prompt", p["messages"][0]["role"], p["messages"][0]["content"])
d = describe_server("everything")
print("describe", d["resources"] > 0, d["resourceTemplates"], d["prompts"] > 0)
for label, f in [("closed_list", lambda: mcp_closed.list_resources()), ("closed_read", lambda: read_resource("closed", doc)),
                 ("closed_prompt", lambda: mcp_closed.get_prompt("args-prompt", {"city": "Oslo"}))]:
    try:
        await f()
        print(label, "allowed")
    except MCPError as e:
        print(label, e.code, "denies every tool" in e.message)
`)
	for _, want := range []string{
		"text str text/markdown True\n",
		"templates ['demo://resource/dynamic/blob/{resourceId}', 'demo://resource/dynamic/text/{resourceId}']\n",
		"blob bytes True\n",
		"links ['bytes', 'str']\n",
		"prompts True\n",
		"prompt user What's weather in Paris, TX?\n",
		"describe True 2 True\n",
		"closed_list policy_denied True\n",
		"closed_read policy_denied True\n",
		"closed_prompt policy_denied True\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	recs, _, err := audit.Tail(audit.Dir(state), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.Kind != "" {
			got = append(got, r.Kind+" "+r.Server+" "+r.Tool+" "+r.Outcome)
		}
	}
	for _, want := range []string{
		"resource everything demo://resource/static/document/architecture.md ok",
		"resource everything demo://resource/dynamic/blob/7 ok",
		"resource everything demo://resource/dynamic/text/2 ok",
		"prompt everything args-prompt ok",
		"resource closed demo://resource/static/document/architecture.md policy_denied",
		"prompt closed args-prompt policy_denied",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no audit record %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}
}
