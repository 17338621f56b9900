package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// confirmPlan is what testdata/ts_confirm.mjs does.
type confirmPlan struct {
	Elicitation bool     `json:"elicitation"`
	Answers     []any    `json:"answers"`
	Steps       []tsStep `json:"steps"`
}

// confirmResult is one step's line: run_python's result and the questions
// the client was asked meanwhile.
type confirmResult struct {
	tsResult
	Asked []struct {
		Message         string `json:"message"`
		RequestedSchema struct {
			Properties map[string]struct {
				Type string   `json:"type"`
				Enum []string `json:"enum"`
			} `json:"properties"`
			Required []string `json:"required"`
		} `json:"requestedSchema"`
	} `json:"asked"`
}

// tsConfirm runs plan through the official TypeScript client against the
// built binary.
func tsConfirm(t *testing.T, env []string, plan confirmPlan) []confirmResult {
	t.Helper()
	raw, _ := json.Marshal(plan)
	return nodeResults[confirmResult](t, "ts_confirm.mjs", []string{binary(t), string(raw)}, env, len(plan.Steps))
}

func choice(d string) map[string]any {
	return map[string]any{"action": "accept", "content": map[string]any{"decision": d}}
}

// confirmServers: server-memory asks before create_* (its entry), and
// server-everything before echo (a glob in the global setting).
func confirmServers(t *testing.T) (dir string) {
	dir = t.TempDir()
	writeServers(t, dir, "s.json", map[string]any{
		"memory": map[string]any{"command": testenv.NPMBin(t, "mcp-server-memory"), "tools": map[string]any{"confirm": []string{"create_*"}},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")},
	})
	return dir
}

// createEntity is code that asks server-memory to create one entity and
// prints what happened: "created", or the MCPError's code and message.
func createEntity(name string) string {
	return fmt.Sprintf(`
try:
    await mcp_memory.create_entities(entities=[{"name": %q, "entityType": "person", "observations": ["met at the test"]}])
    print("created")
except MCPError as e:
    print(e.code, e.message)
`, name)
}

// TestConfirmThroughTSClient: through the official TypeScript client with
// an elicitation handler, a confirmed tool asks (naming server, tool and
// arguments, offering the three choices) and proceeds on "allow once";
// decline refuses it with declined; "allow for this session" asks once for
// the session's calls of that tool, in that run and later ones; silence
// refuses it with declined just before the run's time limit ends. Each answer is audited, and
// only allowed calls reach the server.
func TestConfirmThroughTSClient(t *testing.T) {
	requirePodman(t)
	state := t.TempDir()
	env := append(bridgeEnv(t, confirmServers(t), "MCP_BRIDGE_TOOLS_CONFIRM=ech?"), "MCP_BRIDGE_STATE_DIR="+state)
	rs := tsConfirm(t, env, confirmPlan{
		Elicitation: true,
		Answers:     []any{choice("allow once"), map[string]any{"action": "decline"}, choice("allow for this session"), "silent"},
		Steps: []tsStep{
			{Code: createEntity("Ada")},
			{Code: createEntity("Bob")},
			{Code: `print(await mcp_everything.echo(message="one")); print(await mcp_everything.echo(message="two"))`},
			{Code: `print(await mcp_everything.echo(message="three"), flush=True)` + createEntity("Cy"), Timeout: 5},
			{Code: `print(await mcp_memory.read_graph())`},
		},
	})
	asked := func(i int) []string {
		var out []string
		for _, q := range rs[i].Asked {
			out = append(out, q.Message)
		}
		return out
	}

	// Allow once: asked, with the form, and the entity is created.
	if q := rs[0].Asked; len(q) != 1 {
		t.Fatalf("step 1 asked %q, want one question", asked(0))
	}
	q := rs[0].Asked[0]
	for _, w := range []string{`"create_entities"`, `"memory"`, `"name":"Ada"`, `"create_*" in "tools.confirm" of `} {
		if !strings.Contains(q.Message, w) {
			t.Errorf("question %q does not say %q", q.Message, w)
		}
	}
	if d := q.RequestedSchema.Properties["decision"]; d.Type != "string" || !slices.Equal(d.Enum, []string{"allow once", "allow for this session", "decline"}) ||
		!slices.Equal(q.RequestedSchema.Required, []string{"decision"}) {
		t.Errorf("requested schema %+v, want one required string enum", q.RequestedSchema)
	}
	if rs[0].Out.Stdout != "created\n" {
		t.Errorf("allowed once: %q", rs[0].Text)
	}
	// Decline: asked, refused with declined.
	if len(rs[1].Asked) != 1 || !strings.HasPrefix(rs[1].Out.Stdout, `declined the person declined the call of tool "create_entities" of MCP server "memory"`) {
		t.Errorf("declined: asked %q, printed %q", asked(1), rs[1].Out.Stdout)
	}
	// Allow for this session: one question for two calls.
	if len(rs[2].Asked) != 1 || !strings.Contains(rs[2].Asked[0].Message, `"echo"`) || !strings.Contains(rs[2].Asked[0].Message, "MCP_BRIDGE_TOOLS_CONFIRM") ||
		!strings.Contains(rs[2].Out.Stdout, "Echo: one") || !strings.Contains(rs[2].Out.Stdout, "Echo: two") {
		t.Errorf("allowed for the session: asked %q, printed %q", asked(2), rs[2].Text)
	}
	// The next run: echo is still allowed without asking; silence about
	// create_entities refuses it just before the run's time limit, in time
	// for the code to see why.
	if len(rs[3].Asked) != 1 || !strings.Contains(rs[3].Asked[0].Message, `"name":"Cy"`) {
		t.Errorf("step 4 asked %q, want only about Cy", asked(3))
	}
	if !strings.Contains(rs[3].Out.Stdout, "Echo: three") || !strings.Contains(rs[3].Out.Stdout, "declined ") ||
		!strings.Contains(rs[3].Out.Stdout, "no answer came within the run's time limit") || rs[3].IsError {
		t.Errorf("silence: %s", rs[3].Text)
	}
	// Only the allowed entity reached the server.
	if g := rs[4].Out.Stdout; !strings.Contains(g, "Ada") || strings.Contains(g, "Bob") || strings.Contains(g, "Cy") || len(rs[4].Asked) != 0 {
		t.Errorf("the graph after the approvals: %q (asked %q)", rs[4].Text, asked(4))
	}

	// The audit has each answer.
	type line struct{ tool, outcome, confirm string }
	want := []line{
		{"create_entities", "ok", "allow once"}, {"create_entities", "declined", "decline"},
		{"echo", "ok", "allow for this session"}, {"echo", "ok", "remembered"}, {"echo", "ok", "remembered"},
		{"create_entities", "declined", "no answer"}, {"read_graph", "ok", ""},
	}
	recs, _, err := audit.Tail(audit.Dir(state), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []line
	for _, r := range recs {
		got = append(got, line{r.Tool, r.Outcome, r.Confirm})
	}
	if !slices.Equal(got, want) {
		t.Errorf("audit:\n got %v\nwant %v", got, want)
	}
}

// TestConfirmWithoutElicitation: a client that did not declare the
// elicitation capability is never asked; a confirmed call is refused with
// declined and a message that says why and how to allow the tool, and the
// tools the policy does not ask about work. servers --tools marks the tools
// that ask.
func TestConfirmWithoutElicitation(t *testing.T) {
	requirePodman(t)
	dir := confirmServers(t)
	rs := tsConfirm(t, bridgeEnv(t, dir), confirmPlan{Steps: []tsStep{
		{Code: createEntity("Ada") + `print(await mcp_everything.echo(message="still works"))`},
	}})
	out := rs[0].Out.Stdout
	for _, w := range []string{"declined ", "needs the person's approval", "the agent's client cannot ask", "elicitation capability", `"create_*" in "tools.confirm" of `,
		"remove it from that rule", "Echo: still works"} {
		if !strings.Contains(out, w) {
			t.Errorf("output does not say %q:\n%s", w, rs[0].Text)
		}
	}
	if len(rs[0].Asked) != 0 || rs[0].IsError {
		t.Errorf("asked %d questions; isError %v", len(rs[0].Asked), rs[0].IsError)
	}

	// A person checking the policy sees which tools ask first.
	out, errOut, code := runCLI(t, bridgeEnv(t, dir), "", "servers", "--tools")
	marked := map[string]bool{}
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 1 && strings.Contains(line, "[asks first]") {
			marked[f[0]] = true
		}
	}
	if code != 0 || !marked["create_entities"] || !marked["create_relations"] || marked["read_graph"] || marked["echo"] {
		t.Errorf("servers --tools: exit %d, marked %v, want memory's create_* only:\n%s%s", code, marked, out, errOut)
	}
}
