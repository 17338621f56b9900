package server

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the one tool codebridge offers.
const ToolName = "run_python"

// toolDescription teaches a model the sandbox in as few tokens as possible:
// the whole listed tool stays under 200 tokens (TestListedToolTokens); the
// manual resource and capability_summary() carry the rest. Every helper
// named here must exist in the sandbox (a test checks).
const toolDescription = "Run Python 3 in a sandbox (no network; only /tmp writable; top-level await). " +
	sessionSentence +
	"Code reaches your MCP servers, schemas on demand: discovered_servers(), " +
	"await search_tool_docs(query), await query_tool_docs(server, tool=None), " +
	"await mcp_{server}.{tool}(**args) or call_tool(server, tool, args). " +
	"capability_summary() tells more. Print results."

// sessionSentence is in the description when sessions are on.
const sessionSentence = "State persists across calls; reset=true clears it. "

// toolInput is run_python's arguments.
type toolInput struct {
	Code    string   `json:"code"`
	Servers []string `json:"servers,omitempty"`
	Timeout *float64 `json:"timeout,omitempty"`
	Reset   bool     `json:"reset,omitempty"`
	// Session is a handle (structuredContent.session.handle) of the session
	// to continue, from any MCP session or transport.
	Session string `json:"session,omitempty"`
}

// newTool builds the listed tool. Its JSON is kept in testdata/run_python.golden.json.
func newTool(c Limits) *mcp.Tool {
	session := `,"session":{"type":"string","description":"structuredContent.session.handle to continue"}`
	desc := toolDescription
	if !c.Sessions {
		desc = strings.Replace(desc, sessionSentence, "Each call starts fresh. ", 1)
		session = ""
	}
	schema := fmt.Sprintf(`{"type":"object","properties":{`+
		`"code":{"type":"string","description":"Python source to run"},`+
		`"servers":{"type":"array","items":{"type":"string"},"description":"Servers to start first"},`+
		`"timeout":{"type":"number","minimum":1,"maximum":%d,"description":"Seconds (default %d)"},`+
		`"reset":{"type":"boolean"}%s},`+
		`"required":["code"],"additionalProperties":false}`,
		int(c.MaxTimeout.Seconds()), int(c.Timeout.Seconds()), session)
	return &mcp.Tool{
		Name:        ToolName,
		Description: desc,
		InputSchema: json.RawMessage(schema),
	}
}
