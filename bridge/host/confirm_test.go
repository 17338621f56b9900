package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// fakeAsker is the person behind the agent's client: it answers every
// question with answer, or never when answer is nil, and keeps the
// questions.
type fakeAsker struct {
	answer *mcp.ElicitResult
	out    chan struct{} // if non-nil, receives a value as each question is put
	mu     sync.Mutex
	asked  []string
}

func (f *fakeAsker) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	f.mu.Lock()
	f.asked = append(f.asked, p.Message)
	f.mu.Unlock()
	if f.out != nil {
		f.out <- struct{}{}
	}
	if f.answer == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.answer, nil
}

func (f *fakeAsker) questions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func choose(d elicit.Answer) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": string(d)}}
}

// TestConfirmedCalls: a call the policy asks about reaches the server only
// when the person allows it; otherwise the code gets declined, saying why.
// Each is audited with the answer. Calls the policy does not ask about, or
// blocks anyway, ask nothing.
func TestConfirmedCalls(t *testing.T) {
	entry := discovery.ToolPolicy{Deny: []string{"wipe_*"}, Confirm: []string{"write_*", "wipe_*"}}
	tests := []struct {
		name     string
		answer   *mcp.ElicitResult // nil: silence, until the run's ctx ends or its deadline nears
		deadline time.Duration     // the run's time limit, if any
		outcome  string
		says     string // in the refusal
	}{
		{"allow once", choose(elicit.AllowOnce), 0, "ok", ""},
		{"decline", choose(elicit.Decline), 0, "declined", `the person declined the call of tool "write_file" of MCP server "fs"`},
		{"decline action", &mcp.ElicitResult{Action: "decline"}, 0, "declined", "the person declined"},
		{"cancel", &mcp.ElicitResult{Action: "cancel"}, 0, "declined", "dismissed the question"},
		{"silence until the run ends", nil, 0, "declined", "no answer came within the run's time limit"},
		{"silence until the time limit", nil, 300 * time.Millisecond, "declined", "no answer came within the run's time limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, fp := policyDirectory(discovery.ToolPolicy{}, entry)
			dir := t.TempDir()
			d.audit = audit.New(dir, audit.Options{})
			f := &fakeAsker{answer: tt.answer, out: make(chan struct{}, 3)}
			run := Run{Session: "s", Run: 1, Ask: elicit.NewSession(f)}
			if tt.deadline > 0 {
				run.Deadline = time.Now().Add(tt.deadline)
			}
			h := d.host(run)
			ctx := t.Context()
			if tt.answer == nil && tt.deadline == 0 {
				var cancel func()
				ctx, cancel = context.WithCancel(ctx)
				go func() { <-f.out; cancel() }() // the run's time limit ends while the question waits
			}
			_, err := h.CallTool(ctx, protocol.CallToolParams{Server: "fs", Tool: new("write_file"), Arguments: []byte(`{"path": "/tmp/x", "text": "hi"}`)})
			var re *protocol.Error
			switch {
			case tt.says == "" && err != nil:
				t.Fatalf("call: %v, want it allowed", err)
			case tt.says != "" && (!errors.As(err, &re) || re.Code != protocol.CodeDeclined || !strings.Contains(re.Message, tt.says)):
				t.Fatalf("call: %v, want declined saying %q", err, tt.says)
			}
			if q := f.questions(); len(q) != 1 || !strings.Contains(q[0], `{"path":"/tmp/x","text":"hi"}`) || !strings.Contains(q[0], `"write_*" in "tools.confirm" of `+policyFile) {
				t.Errorf("questions %q: want one naming the arguments and the rule", q)
			}
			if n, want := len(fp.callSizes()), map[bool]int{true: 1, false: 0}[tt.says == ""]; n != want {
				t.Errorf("%d calls reached the server, want %d", n, want)
			}
			// Calls that ask nothing: not confirmed, or blocked before asking.
			if _, err := hostCall(t, h, "call_tool", map[string]any{"server": "fs", "tool": "read_file"}); err != nil {
				t.Errorf("read_file: %v", err)
			}
			if _, err := hostCall(t, h, "call_tool", map[string]any{"server": "fs", "tool": "wipe_file"}); !errors.As(err, &re) || re.Code != protocol.CodePolicyDenied {
				t.Errorf("wipe_file: %v, want policy_denied", err)
			}
			if q := f.questions(); len(q) != 1 {
				t.Errorf("%d questions, want only write_file's", len(q))
			}
			recs, _, err := audit.Tail(dir, 0, nil)
			if err != nil || len(recs) != 3 {
				t.Fatalf("%d records, %v", len(recs), err)
			}
			answer := elicit.Answer("")
			if tt.answer == nil {
				answer = elicit.NoAnswer
			} else if tt.answer.Action == "accept" {
				answer = elicit.Answer(tt.answer.Content["decision"].(string))
			} else {
				answer = elicit.Answer(tt.answer.Action)
			}
			if r := recs[0]; r.Tool != "write_file" || r.Outcome != tt.outcome || r.Confirm != string(answer) {
				t.Errorf("audit of write_file: outcome %q confirm %q, want %q and %q", r.Outcome, r.Confirm, tt.outcome, answer)
			}
			if recs[1].Confirm != "" || recs[2].Confirm != "" {
				t.Errorf("calls that asked nothing record a confirmation: %+v", recs[1:])
			}
		})
	}
}

// TestConfirmForSession: "allow for this session" asks once for the
// session's later calls of that tool, in this run and the next, and not
// for another tool; confirmWrites asks for tools not annotated read-only.
func TestConfirmForSession(t *testing.T) {
	d, fp := policyDirectory(discovery.ToolPolicy{ConfirmWrites: new(true)}, discovery.ToolPolicy{})
	dir := t.TempDir()
	d.audit = audit.New(dir, audit.Options{})
	f := &fakeAsker{answer: choose(elicit.AllowSession)}
	ask := elicit.NewSession(f)
	for run := 1; run <= 2; run++ {
		h := d.host(Run{Session: "s", Run: run, Ask: ask})
		for _, tool := range []string{"write_file", "write_file", "read_file"} {
			if _, err := hostCall(t, h, "call_tool", map[string]any{"server": "fs", "tool": tool}); err != nil {
				t.Fatalf("run %d %s: %v", run, tool, err)
			}
		}
	}
	if q := f.questions(); len(q) != 1 || !strings.Contains(q[0], "MCP_BRIDGE_TOOLS_CONFIRM_WRITES=1") {
		t.Errorf("questions %q, want one, for write_file, naming the setting", q)
	}
	if n := len(fp.callSizes()); n != 6 {
		t.Errorf("%d calls reached the server, want 6", n)
	}
	recs, _, _ := audit.Tail(dir, 0, nil)
	var got []string
	for _, r := range recs {
		got = append(got, r.Confirm)
	}
	want := "allow for this session,remembered,,remembered,remembered,"
	if strings.Join(got, ",") != want {
		t.Errorf("audited answers %q, want %q", strings.Join(got, ","), want)
	}
}

// TestConfirmCannotAsk: without a client that can ask, a confirmed call is
// refused at once, saying why and how to allow the tool.
func TestConfirmCannotAsk(t *testing.T) {
	d, fp := policyDirectory(discovery.ToolPolicy{}, discovery.ToolPolicy{Confirm: []string{"write_*"}})
	for _, ask := range []*elicit.Session{nil, elicit.NewSession(nil)} {
		_, err := hostCall(t, d.host(Run{Ask: ask}), "call_tool", map[string]any{"server": "fs", "tool": "write_file"})
		var re *protocol.Error
		if !errors.As(err, &re) || re.Code != protocol.CodeDeclined {
			t.Fatalf("call: %v, want declined", err)
		}
		for _, w := range []string{"cannot ask", "elicitation capability", `"tools.confirm" of ` + policyFile, "remove it from that rule"} {
			if !strings.Contains(re.Message, w) {
				t.Errorf("%q does not say %q", re.Message, w)
			}
		}
	}
	if n := len(fp.callSizes()); n != 0 {
		t.Errorf("%d calls reached the server", n)
	}
}

// argsPool is annotatedPool that keeps the arguments of each call as they
// reached the server.
type argsPool struct {
	annotatedPool
	mu   sync.Mutex
	sent []string
}

func (p *argsPool) CallFor(ctx context.Context, peer pool.Peer, server, tool string, args any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	raw, _ := args.(json.RawMessage)
	p.mu.Lock()
	p.sent = append(p.sent, string(raw))
	p.mu.Unlock()
	return p.annotatedPool.CallFor(ctx, peer, server, tool, args, progress)
}

// TestConfirmShowsWhatIsSent: what the person approves is what the server
// gets. Arguments that repeat a key (which most parsers read as the last
// one) are refused before anyone is asked; every top-level key is in the
// question however long another key's value is; the server gets the
// arguments as the question showed them; and arguments with more keys than
// a question can show are refused, telling the code to send smaller ones.
func TestConfirmShowsWhatIsSent(t *testing.T) {
	pad := strings.Repeat("x", 1200) // longer than a question shows
	tooMany := map[string]any{}
	for i := range 400 {
		tooMany[fmt.Sprintf("key_%03d", i)] = i
	}
	manyKeys, _ := json.Marshal(tooMany)
	tests := []struct {
		name  string
		args  string
		asked bool     // a question was put
		shows []string // in the question
		sent  string   // what the server got; "" for nothing
		says  string   // in the refusal to the code
	}{
		{name: "repeated key", args: `{"path":"notes.txt","pad":"` + pad + `","path":"/home/u/.ssh/id_rsa"}`,
			says: `key "path" appears twice`},
		{name: "repeated nested key", args: `{"a":[{"b":1,"b":2}]}`, says: `key "b" appears twice`},
		{name: "padding before a key", args: `{"pad":"` + pad + `","path":"/home/u/.ssh/id_rsa"}`, asked: true,
			shows: []string{`"pad": "xxxx`, `"path": "/home/u/.ssh/id_rsa"`},
			sent:  `{"pad":"` + pad + `","path":"/home/u/.ssh/id_rsa"}`},
		{name: "sent as shown", args: "{ \"z\": \"\\u0041\u202e\", \"a\": 1e2 }", asked: true,
			shows: []string{`{"a":1e2,"z":"A\u202e"}`}, sent: `{"a":1e2,"z":"A\u202e"}`},
		{name: "too many keys", args: string(manyKeys), says: "send smaller arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := &argsPool{}
			d := newDirectory(fp, 1<<20, nil)
			d.Update(policyConfig(discovery.ToolPolicy{Confirm: []string{"write_*"}}))
			f := &fakeAsker{answer: choose(elicit.AllowOnce)}
			h := d.host(Run{Ask: elicit.NewSession(f)})
			_, err := h.CallTool(t.Context(), protocol.CallToolParams{Server: "fs", Tool: new("write_file"), Arguments: json.RawMessage(tt.args)})
			var re *protocol.Error
			switch {
			case tt.says == "" && err != nil:
				t.Fatalf("call: %v, want it allowed", err)
			case tt.says != "" && (!errors.As(err, &re) || re.Code != protocol.CodeBadArguments || !strings.Contains(re.Message, tt.says)):
				t.Fatalf("call: %v, want bad_arguments saying %q", err, tt.says)
			}
			q := f.questions()
			if len(q) != map[bool]int{true: 1}[tt.asked] {
				t.Fatalf("questions %q, asked want %v", q, tt.asked)
			}
			for _, w := range tt.shows {
				if !strings.Contains(q[0], w) {
					t.Errorf("question %q does not show %q", q[0], w)
				}
			}
			if want := map[bool][]string{true: {tt.sent}}[tt.sent != ""]; !slices.Equal(fp.sent, want) {
				t.Errorf("the server got %q, want %q", fp.sent, want)
			}
		})
	}
}
