package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// catalogURL serves a [bridgetest.CatalogServer] over streamable HTTP on
// loopback.
func catalogURL(t *testing.T) string {
	t.Helper()
	s := bridgetest.CatalogServer("rich")
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestCatalogRequests: resources and prompts through the dispatch table and
// the real pool; a server without them, a closed one, a disabled one and a
// bad URI are refused with codes code can branch on; reads and gets are
// audited with their kinds, list requests are not.
func TestCatalogRequests(t *testing.T) {
	url := catalogURL(t)
	http := func(name string, tools discovery.ToolPolicy) *discovery.Server {
		return &discovery.Server{Name: name, Source: "/home/u/MCPs/" + name + ".json", Transport: discovery.Streamable, URL: url, Tools: tools}
	}
	d := testDirectory(t,
		http("rich", discovery.ToolPolicy{}),
		&discovery.Server{Name: "plain", Transport: discovery.Streamable, URL: mathServer(t)},
		http("closed", discovery.ToolPolicy{Deny: []string{"*"}}),
		http("ro", discovery.ToolPolicy{ReadOnly: new(true), Deny: []string{"echo"}}),
		&discovery.Server{Name: "off", Transport: discovery.Streamable, URL: url, Disabled: true},
	)
	dir := t.TempDir()
	d.audit = audit.New(dir, audit.Options{Contents: true})
	h := d.host(Run{Session: "s1", Run: 1})

	blob := base64.StdEncoding.EncodeToString(bridgetest.Blob)
	tests := []struct {
		name     string
		method   string
		params   map[string]any
		want     []string // substrings of the result as JSON
		wantCode protocol.Code
		wantMsg  string
	}{
		{name: "list resources", method: "list_resources", params: map[string]any{"server": "rich"},
			want: []string{`"uri":"test://text"`, `"mimeType":"text/plain"`, `"uri":"test://blob"`, `"description":"a greeting"`}},
		{name: "list templates", method: "list_resource_templates", params: map[string]any{"server": "rich"},
			want: []string{`"uriTemplate":"test://item/{id}"`}},
		{name: "read text", method: "read_resource", params: map[string]any{"server": "rich", "uri": "test://text"},
			want: []string{`"contents":[{"mimeType":"text/plain","text":"hello","uri":"test://text"}]`}},
		{name: "read blob", method: "read_resource", params: map[string]any{"server": "rich", "uri": "test://blob"},
			want: []string{`"blob":"` + blob + `"`}},
		{name: "read from template", method: "read_resource", params: map[string]any{"server": "rich", "uri": "test://item/42"},
			want: []string{`"text":"item 42"`}},
		{name: "list prompts", method: "list_prompts", params: map[string]any{"server": "rich"},
			want: []string{`"name":"greet"`, `"arguments":[{"name":"name","required":true}]`}},
		{name: "get prompt", method: "get_prompt", params: map[string]any{"server": "rich", "name": "greet", "arguments": map[string]string{"name": "Ada"}},
			want: []string{`"role":"user"`, `"text":"Hello, Ada!"`}},
		{name: "read-only admits resources", method: "read_resource", params: map[string]any{"server": "ro", "uri": "test://text"},
			want: []string{`"text":"hello"`}},
		{name: "no resources", method: "list_resources", params: map[string]any{"server": "plain"},
			wantCode: protocol.CodeUnsupported, wantMsg: `MCP server "plain" does not offer resources`},
		{name: "no prompts", method: "get_prompt", params: map[string]any{"server": "plain", "name": "greet"},
			wantCode: protocol.CodeUnsupported, wantMsg: `does not offer prompts`},
		{name: "closed server", method: "list_resources", params: map[string]any{"server": "closed"},
			wantCode: protocol.CodePolicyDenied, wantMsg: `MCP server "closed" is closed by policy: "*" in "tools.deny" of /home/u/MCPs/closed.json`},
		{name: "closed server read", method: "read_resource", params: map[string]any{"server": "closed", "uri": "test://text"},
			wantCode: protocol.CodePolicyDenied, wantMsg: "closed by policy"},
		{name: "disabled server", method: "list_prompts", params: map[string]any{"server": "off"},
			wantCode: protocol.CodeUnknownServer, wantMsg: `MCP server "off" is disabled`},
		{name: "unknown resource", method: "read_resource", params: map[string]any{"server": "rich", "uri": "test://nope"},
			wantCode: protocol.CodeBadArguments, wantMsg: `reading resource "test://nope" of MCP server "rich"`},
		{name: "no uri", method: "read_resource", params: map[string]any{"server": "rich"},
			wantCode: protocol.CodeBadArguments, wantMsg: "read_resource needs a URI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := hostCall(t, h, tt.method, tt.params)
			if tt.wantCode != "" {
				var re *protocol.Error
				if !errors.As(err, &re) || re.Code != tt.wantCode || !strings.Contains(re.Message, tt.wantMsg) {
					t.Fatalf("err = %v, want %s containing %q", err, tt.wantCode, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(res)
			for _, w := range tt.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("result %s lacks %s", got, w)
				}
			}
		})
	}

	recs, _, err := audit.Tail(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Kind+" "+r.Server+" "+r.Tool+" "+r.Outcome)
		if r.Session != "s1" || r.Run != 1 || r.Time.IsZero() {
			t.Errorf("record %+v: session, run or time missing", r)
		}
	}
	want := []string{
		"resource rich test://text ok",
		"resource rich test://blob ok",
		"resource rich test://item/42 ok",
		"prompt rich greet ok",
		"resource ro test://text ok",
		"prompt plain greet unsupported",
		"resource closed test://text policy_denied",
		"resource rich test://nope bad_arguments",
		"resource rich  bad_arguments",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range recs {
		if r.Kind == audit.KindPrompt && r.Outcome == "ok" && (string(r.Arguments) != `{"name":"Ada"}` || !strings.Contains(string(r.Result), "Hello, Ada!")) {
			t.Errorf("prompt record: arguments %s, result %s", r.Arguments, r.Result)
		}
	}
}

// TestDescribeServerCounts: describe_server counts resources, templates and
// prompts of a running server, 0 for one without, and nothing for a server
// not running.
func TestDescribeServerCounts(t *testing.T) {
	d := testDirectory(t,
		&discovery.Server{Name: "rich", Transport: discovery.Streamable, URL: catalogURL(t)},
		&discovery.Server{Name: "plain", Transport: discovery.Streamable, URL: mathServer(t)})
	h := d.host(Run{})
	for _, tt := range []struct{ server, want string }{
		{"rich", `"prompts":1,"resourceTemplates":1,"resources":3`},
		{"plain", `"prompts":0,"resourceTemplates":0,"resources":0`},
	} {
		res, err := hostCall(t, h, "describe_server", map[string]any{"server": tt.server})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(res)
		if !strings.Contains(string(got), tt.want) {
			t.Errorf("describe_server(%s) = %s, want %s", tt.server, got, tt.want)
		}
	}
}

// TestCatalogPolicyEdit: closing a server applies to a run in progress.
func TestCatalogPolicyEdit(t *testing.T) {
	url := catalogURL(t)
	srv := &discovery.Server{Name: "rich", Transport: discovery.Streamable, URL: url}
	d := testDirectory(t, srv)
	h := d.host(Run{})
	if _, err := hostCall(t, h, "list_prompts", map[string]any{"server": "rich"}); err != nil {
		t.Fatal(err)
	}
	closed := *srv
	closed.Tools.Deny = []string{"*"}
	d.Update(&discovery.Config{Servers: []*discovery.Server{&closed}})
	var re *protocol.Error
	if _, err := hostCall(t, h, "list_prompts", map[string]any{"server": "rich"}); !errors.As(err, &re) || re.Code != protocol.CodePolicyDenied {
		t.Fatalf("after the edit: %v, want policy_denied", err)
	}
}

// noCatalog is the [Catalog] of a fake downstream whose server offers no
// resources or prompts.
type noCatalog struct{}

func (noCatalog) Resources(_ context.Context, server string) ([]*mcp.Resource, error) {
	return nil, unsupported(server)
}

func (noCatalog) ResourceTemplates(_ context.Context, server string) ([]*mcp.ResourceTemplate, error) {
	return nil, unsupported(server)
}

func (noCatalog) ReadResource(_ context.Context, server, _ string) (*mcp.ReadResourceResult, error) {
	return nil, unsupported(server)
}

func (noCatalog) Prompts(_ context.Context, server string) ([]*mcp.Prompt, error) {
	return nil, unsupported(server)
}

func (noCatalog) GetPrompt(_ context.Context, server, _ string, _ map[string]string) (*mcp.GetPromptResult, error) {
	return nil, unsupported(server)
}

func (noCatalog) Complete(_ context.Context, server string, _ *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return nil, unsupported(server)
}

func unsupported(server string) error {
	return fmt.Errorf("MCP server %q does not offer them (%w)", server, pool.ErrUnsupported)
}
