package lane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// downstream serves srv over streamable HTTP on loopback, counting the
// requests it gets, so a test can tell that it was not started.
func downstream(t *testing.T, srv *mcp.Server) (url string, requests *atomic.Int64) {
	t.Helper()
	requests = new(atomic.Int64)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, requests
}

// mathServer has a tool the tests' policy admits and one it denies.
func mathServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "math"}, nil)
	type sum struct{ A, B float64 }
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "adds two numbers", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://math/add.html"}}},
		func(_ context.Context, _ *mcp.CallToolRequest, in sum) (*mcp.CallToolResult, any, error) {
			raw, _ := json.Marshal(in.A + in.B)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "drop_tables", Description: "drops every table"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "dropped"}}}, nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "ui://math/add.html", Name: "add-ui", MIMEType: "text/html;profile=mcp-app"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ui://math/add.html", MIMEType: "text/html;profile=mcp-app", Text: "<p>add</p>"}}}, nil
		})
	return s
}

// rig is a directory over a real pool with two downstream servers, and
// its manifests in a folder of its own.
type rig struct {
	dir       *host.Directory
	pool      *pool.Pool
	cfg       *discovery.Config
	manifests *manifest.Store
	requests  map[string]*atomic.Int64
}

func newRig(t *testing.T, manifests *manifest.Store) *rig {
	t.Helper()
	return newRigWith(t, host.Options{Manifests: manifests})
}

// newRigWith is newRig with the directory's options.
func newRigWith(t *testing.T, opts host.Options) *rig {
	t.Helper()
	catURL, catReqs := downstream(t, bridgetest.CatalogServer("cat"))
	mathURL, mathReqs := downstream(t, mathServer())
	r := &rig{manifests: opts.Manifests, requests: map[string]*atomic.Int64{"cat": catReqs, "math": mathReqs}}
	r.cfg = &discovery.Config{Servers: []*discovery.Server{
		{Name: "cat", Transport: discovery.Streamable, URL: catURL},
		{Name: "math", Transport: discovery.Streamable, URL: mathURL, Tools: discovery.ToolPolicy{Deny: []string{"drop_tables"}}},
	}}
	r.pool = pool.New(pool.Options{OnTools: func(def *discovery.Server, tools []*mcp.Tool, instructions string) {
		r.dir.SaveManifest(def, tools, instructions)
	}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.pool.Close(ctx)
	})
	r.dir = host.New(r.pool, opts)
	r.pool.Update(r.cfg.Servers)
	r.dir.Update(r.cfg)
	return r
}

// connect connects a go-sdk client to srv over in-memory transports.
func connect(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	// 2025-11-25, the newest version whose servers ask their clients by requests.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client"}, opts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

// text is the text of a tool result.
func text(res *mcp.CallToolResult) string { return bridgetest.Text(res) }

// TestToolsLane: the downstream tools under their lane names, those the
// policy denies left out and refused as code is refused; a call starts
// the server, whose resources, templates and prompts then appear with
// list_changed; an MCP App's _meta.ui is passed through and its ui://
// resource read; a reload without a server removes its tools, and one
// with a new server adds its, each notified.
func TestToolsLane(t *testing.T) {
	// Served before the rig's pool starts, so it is closed after the pool.
	extraURL, _ := downstream(t, bridgetest.CatalogServer("extra"))
	r := newRig(t, manifest.New(t.TempDir()))
	lane := NewTools(Options{Dir: r.dir})
	t.Cleanup(lane.Close)
	toolsChanged, resourcesChanged := make(chan struct{}, 8), make(chan struct{}, 8)
	cs := connect(t, lane.MCP(), &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resourcesChanged <- struct{}{} },
	})

	if got, want := toolNames(t, cs), []string{"cat__echo", "math__add"}; !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want %v", got, want)
	}
	tools, _ := cs.ListTools(t.Context(), nil)
	for _, tool := range tools.Tools {
		if tool.Name == "math__add" && uiResource(tool) != "ui://math/add.html" {
			t.Errorf("math__add's _meta = %v, want its ui resource passed through", tool.Meta)
		}
	}

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "math__add", Arguments: map[string]any{"A": 2, "B": 40}})
	if err != nil || res.IsError || text(res) != "42" {
		t.Fatalf("math__add: %v %v %q", err, res != nil && res.IsError, text(res))
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "math__drop_tables"})
	if err != nil || !res.IsError || !strings.HasPrefix(text(res), "policy_denied: ") || !strings.Contains(text(res), "drop_tables") {
		t.Errorf("a denied tool: %v, %q; want it refused with policy_denied, as code is", err, text(res))
	}

	// The call started math: its ui resource is listed now, and readable.
	waitFor(t, resourcesChanged, "resources/list_changed after a server started")
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ui://math/add.html"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "<p>add</p>" {
		t.Errorf("reading the ui resource: %v %+v", err, rr)
	}

	// cat is not running: calling its tool starts it.
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "cat__echo"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "cat's resources and prompts to be listed", func() bool {
		p, err := cs.ListPrompts(t.Context(), nil)
		return err == nil && len(p.Prompts) == 1 && p.Prompts[0].Name == "cat__greet"
	})
	rr, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "test://text"})
	if err != nil || rr.Contents[0].Text != "hello" {
		t.Errorf("reading test://text: %v %+v", err, rr)
	}
	rr, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "test://item/7"})
	if err != nil || rr.Contents[0].Text != "item 7" {
		t.Errorf("reading test://item/7 through its template: %v %+v", err, rr)
	}
	gp, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "cat__greet", Arguments: map[string]string{"name": "Ann"}})
	if err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ann!" {
		t.Errorf("cat__greet: %v %+v", err, gp)
	}

	// A reload without cat: its tools go, and the client is told.
	drain(toolsChanged)
	cfg := &discovery.Config{Servers: r.cfg.Servers[1:]}
	r.pool.Update(cfg.Servers)
	r.dir.Update(cfg)
	lane.Changed()
	waitFor(t, toolsChanged, "tools/list_changed after a reload")
	if got, want := toolNames(t, cs), []string{"math__add"}; !slices.Equal(got, want) {
		t.Errorf("tools/list after the reload = %v, want %v", got, want)
	}

	// A reload that adds a server never listed: it is started to be listed.
	drain(toolsChanged)
	cfg = &discovery.Config{Servers: append(cfg.Servers, &discovery.Server{Name: "extra", Transport: discovery.Streamable, URL: extraURL})}
	r.pool.Update(cfg.Servers)
	r.dir.Update(cfg)
	lane.Changed()
	waitFor(t, toolsChanged, "tools/list_changed after a reload added a server")
	if got, want := toolNames(t, cs), []string{"extra__echo", "math__add"}; !slices.Equal(got, want) {
		t.Errorf("tools/list after the reload = %v, want %v", got, want)
	}
}

// TestToolsLaneQuarantine: with new tools quarantined until approved,
// none is listed, and a call of one by its lane name is refused as code's
// call is, saying how to approve it; once approved, it is called and
// listed.
func TestToolsLaneQuarantine(t *testing.T) {
	r := newRigWith(t, host.Options{Manifests: manifest.New(t.TempDir()), QuarantineNew: true})
	lane := NewTools(Options{Dir: r.dir})
	t.Cleanup(lane.Close)
	changed := make(chan struct{}, 8)
	cs := connect(t, lane.MCP(), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if got := toolNames(t, cs); len(got) != 0 {
		t.Errorf("tools/list = %v, want none: every tool is new and held", got)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "cat__echo"})
	if err != nil || !res.IsError || !strings.HasPrefix(text(res), "quarantined: tool cat.echo is quarantined") || !strings.Contains(text(res), "codebridge tools approve cat echo") {
		t.Errorf("calling a quarantined tool: %v %q", err, text(res))
	}

	// Approved (codebridge tools approve cat echo): the call goes through,
	// and the listing follows, announced.
	tools, err := r.pool.Tools(t.Context(), "cat")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.manifests.Approve("cat", tools); err != nil {
		t.Fatal(err)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "cat__echo"})
	if err != nil || res.IsError || text(res) != "echo" {
		t.Errorf("calling the approved tool: %v %q", err, text(res))
	}
	waitFor(t, changed, "tools/list_changed after the approval")
	if got := toolNames(t, cs); !slices.Equal(got, []string{"cat__echo"}) {
		t.Errorf("tools/list after the approval = %v, want cat__echo", got)
	}
}

// TestToolsLaneFromManifests: a lane over servers whose tool lists were
// saved lists their tools without starting any of them.
func TestToolsLaneFromManifests(t *testing.T) {
	manifests := manifest.New(t.TempDir())
	first := newRig(t, manifests)
	for _, o := range first.dir.Offers(t.Context(), true) { // starts both, saving their lists
		if o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	r := newRig(t, manifests)
	// The same definitions as the first rig's, so their saved lists apply.
	r.cfg = first.cfg
	r.pool.Update(r.cfg.Servers)
	r.dir.Update(r.cfg)
	lane := NewTools(Options{Dir: r.dir})
	t.Cleanup(lane.Close)
	cs := connect(t, lane.MCP(), nil)
	before := first.requests["cat"].Load() + first.requests["math"].Load()
	if got, want := toolNames(t, cs), []string{"cat__echo", "math__add"}; !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want %v", got, want)
	}
	if r.pool.Running("cat") || r.pool.Running("math") {
		t.Error("listing the tools started a server")
	}
	if after := first.requests["cat"].Load() + first.requests["math"].Load(); after != before {
		t.Errorf("the servers got %d requests while the tools were listed", after-before)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "cat__echo"})
	if err != nil || text(res) != "echo" || !r.pool.Running("cat") {
		t.Errorf("calling cat__echo: %v %q running=%v", err, text(res), r.pool.Running("cat"))
	}
	// The ui:// resource math__add's _meta names reads before math runs:
	// the read starts it.
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ui://math/add.html"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "<p>add</p>" || !r.pool.Running("math") {
		t.Errorf("reading math's ui resource while it was not running: %v %+v", err, rr)
	}
}

// TestSearchLane: find_tools finds a tool by what it does, describe_tool
// gives its schema, call_tool calls it, and a denied tool is refused.
func TestSearchLane(t *testing.T) {
	r := newRig(t, manifest.New(t.TempDir()))
	lane := NewSearch(Options{Dir: r.dir})
	t.Cleanup(lane.Close)
	cs := connect(t, lane.MCP(), nil)
	if got, want := toolNames(t, cs), []string{CallTool, DescribeTool, FindTools}; !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want %v", got, want)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: FindTools, Arguments: map[string]any{"query": "add two numbers", "limit": 1}})
	if err != nil || res.IsError {
		t.Fatalf("find_tools: %v %q", err, text(res))
	}
	var found struct{ Results []hit }
	if err := json.Unmarshal([]byte(text(res)), &found); err != nil || len(found.Results) != 1 || found.Results[0].Server != "math" || found.Results[0].Tool != "add" {
		t.Fatalf("find_tools: %v %q, want math add", err, text(res))
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: DescribeTool, Arguments: map[string]any{"server": "math", "tool": "add"}})
	if err != nil || res.IsError || !strings.Contains(text(res), `"inputSchema"`) {
		t.Errorf("describe_tool: %v %q", err, text(res))
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: CallTool, Arguments: map[string]any{"server": "math", "tool": "add", "arguments": map[string]any{"A": 1, "B": 2}}})
	if err != nil || res.IsError || text(res) != "3" {
		t.Errorf("call_tool math add: %v %q", err, text(res))
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: CallTool, Arguments: map[string]any{"server": "math", "tool": "drop_tables"}})
	if err != nil || !res.IsError || !strings.HasPrefix(text(res), "policy_denied: ") {
		t.Errorf("call_tool of a denied tool: %v %q", err, text(res))
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
	}
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestToolsLaneAsks: a call the policy wants approved is asked of the
// person through the lane's client, by elicitation; "allow for this
// session" lasts that MCP session only; a client that cannot be asked
// gets the refusal code gets.
func TestToolsLaneAsks(t *testing.T) {
	r := newRig(t, manifest.New(t.TempDir()))
	cfg := &discovery.Config{Servers: []*discovery.Server{r.cfg.Servers[0], {
		Name: "math", Transport: discovery.Streamable, URL: r.cfg.Servers[1].URL, Tools: discovery.ToolPolicy{Confirm: []string{"add"}}}}}
	r.pool.Update(cfg.Servers)
	r.dir.Update(cfg)
	lane := NewTools(Options{Dir: r.dir})
	t.Cleanup(lane.Close)
	var asked atomic.Int64
	asking := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		if !strings.Contains(req.Params.Message, `tool "add" of MCP server "math"`) {
			t.Errorf("the question: %q", req.Params.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow for this session"}}, nil
	}}
	add := &mcp.CallToolParams{Name: "math__add", Arguments: map[string]any{"A": 1, "B": 1}}
	cs := connect(t, lane.MCP(), asking)
	for range 2 {
		if res, err := cs.CallTool(t.Context(), add); err != nil || res.IsError || text(res) != "2" {
			t.Fatalf("math__add, approved: %v %q", err, text(res))
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("asked %d times in one session, want once: the session was allowed", n)
	}
	other := connect(t, lane.MCP(), asking)
	if res, err := other.CallTool(t.Context(), add); err != nil || res.IsError {
		t.Fatalf("math__add from another session: %v %q", err, text(res))
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("asked %d times over two sessions, want twice", n)
	}
	mute := connect(t, lane.MCP(), nil)
	res, err := mute.CallTool(t.Context(), add)
	if err != nil || !res.IsError || !strings.HasPrefix(text(res), "declined: ") || !strings.Contains(text(res), "cannot ask") {
		t.Errorf("math__add from a client without elicitation: %v %q", err, text(res))
	}
}

// laneOver is a tools lane over one downstream server, srv, named name.
func laneOver(t *testing.T, name string, srv *mcp.Server) *Tools {
	t.Helper()
	url, _ := downstream(t, srv) // before the rig's pool, so it is closed after it
	r := newRig(t, manifest.New(t.TempDir()))
	cfg := &discovery.Config{Servers: []*discovery.Server{{Name: name, Transport: discovery.Streamable, URL: url}}}
	r.pool.Update(cfg.Servers)
	r.dir.Update(cfg)
	lane := NewTools(Options{Dir: r.dir})
	t.Cleanup(lane.Close)
	return lane
}

// TestToolsLaneProgress: a downstream server's progress on a call reaches
// the client that asked for progress on it. The server waits for the
// client to have each notification before it goes on, so none is still on
// its way when the result comes.
func TestToolsLaneProgress(t *testing.T) {
	acks := make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "slow"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "count", Description: "counts to three"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			for i := 1; i <= 3; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3})
				select {
				case <-acks:
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	lane := laneOver(t, "slow", s)
	got := make(chan float64, 8)
	cs := connect(t, lane.MCP(), &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		got <- req.Params.Progress
		acks <- struct{}{}
	}})
	params := &mcp.CallToolParams{Name: "slow__count"}
	params.SetProgressToken("p1")
	if res, err := cs.CallTool(t.Context(), params); err != nil || text(res) != "done" {
		t.Fatalf("slow__count: %v %q", err, text(res))
	}
	if len(got) != 3 {
		t.Errorf("%d progress notifications, want 3", len(got))
	}
}

// TestToolsLaneCompletions: a completion of a prompt's argument reaches the
// prompt's server under the prompt's own name.
func TestToolsLaneCompletions(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "geo"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			if req.Params.Ref.Name != "weather" {
				return nil, fmt.Errorf("no prompt %q", req.Params.Ref.Name)
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "is"}}}, nil
		}})
	mcp.AddTool(s, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "weather", Arguments: []*mcp.PromptArgument{{Name: "city"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	lane := laneOver(t, "geo", s)
	cs := connect(t, lane.MCP(), nil)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "geo__noop"}); err != nil { // starts geo
		t.Fatal(err)
	}
	testenv.Eventually(t, "geo's prompt to be served", func() bool {
		p, err := cs.ListPrompts(t.Context(), nil)
		return err == nil && len(p.Prompts) == 1
	})
	res, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "geo__weather"},
		Argument: mcp.CompleteParamsArgument{Name: "city", Value: "Par"}})
	if err != nil || len(res.Completion.Values) != 1 || res.Completion.Values[0] != "Paris" {
		t.Errorf("completing geo__weather's city: %v %+v", err, res)
	}
}
