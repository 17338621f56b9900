package elicit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeAsker answers every question with answer (nil: it never answers) and
// records the questions.
type fakeAsker struct {
	answer *mcp.ElicitResult
	mu     sync.Mutex
	asked  []*mcp.ElicitParams
}

func (f *fakeAsker) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	f.mu.Lock()
	f.asked = append(f.asked, p)
	f.mu.Unlock()
	if f.answer == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.answer, nil
}

func (f *fakeAsker) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

func decision(d Answer) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": string(d)}}
}

// TestConfirm: each answer of the person, and no answer, gives the Answer
// the host acts on; the question names server, tool, arguments and why.
func TestConfirm(t *testing.T) {
	tests := []struct {
		name   string
		answer *mcp.ElicitResult
		want   Answer
	}{
		{"allow once", decision(AllowOnce), AllowOnce},
		{"allow session", decision(AllowSession), AllowSession},
		{"decline choice", decision(Decline), Decline},
		{"decline action", &mcp.ElicitResult{Action: "decline"}, Decline},
		{"cancel", &mcp.ElicitResult{Action: "cancel"}, Cancel},
		{"other choice", decision("sure"), Decline},
		{"accept without content", &mcp.ElicitResult{Action: "accept"}, Decline},
		{"silence", nil, NoAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAsker{answer: tt.answer}
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			got, err := NewSession(f).Confirm(ctx, "memory", "create_entities", json.RawMessage(`{"entities":[1]}`), `it matches "create_*" in X`)
			if err != nil || got != tt.want {
				t.Fatalf("Confirm = %q, %v; want %q", got, err, tt.want)
			}
			if got.Allowed() != (tt.want == AllowOnce || tt.want == AllowSession) {
				t.Errorf("%q.Allowed() = %v", got, got.Allowed())
			}
			msg := f.asked[0].Message
			for _, want := range []string{`"create_entities"`, `"memory"`, `{"entities":[1]}`, `it matches "create_*" in X`} {
				if !strings.Contains(msg, want) {
					t.Errorf("question %q lacks %q", msg, want)
				}
			}
			if f.asked[0].Mode != "form" || f.asked[0].RequestedSchema == nil {
				t.Errorf("question is not a form: %+v", f.asked[0])
			}
		})
	}
}

// TestAllowSession: an approval for the session covers later and
// concurrent calls of that tool only, and a session that cannot ask says so.
func TestAllowSession(t *testing.T) {
	f := &fakeAsker{answer: decision(AllowSession)}
	s := NewSession(f)
	var wg sync.WaitGroup
	answers := make([]Answer, 3)
	for i := range answers {
		wg.Go(func() {
			answers[i], _ = s.Confirm(t.Context(), "memory", "create_entities", json.RawMessage(`{}`), "why")
		})
	}
	wg.Wait()
	if n := f.count(); n != 1 {
		t.Errorf("asked %d times for three calls, want once: %v", n, answers)
	}
	if a, _ := s.Confirm(t.Context(), "memory", "delete_entities", json.RawMessage(`{}`), "why"); a != AllowSession || f.count() != 2 {
		t.Errorf("another tool: %q after %d questions, want asked again", a, f.count())
	}
	if a, _ := NewSession(f).Confirm(t.Context(), "memory", "create_entities", json.RawMessage(`{}`), "why"); a != AllowSession || f.count() != 3 {
		t.Errorf("another session: %q after %d questions, want asked again", a, f.count())
	}
	var none *Session
	if a, _ := NewSession(nil).Confirm(t.Context(), "m", "t", json.RawMessage(`{}`), "why"); a != CannotAsk || none.CanAsk() {
		t.Errorf("a client that cannot ask: %q", a)
	}
}

// TestCanonical: one form per value (sorted keys, no space, numbers as
// written, characters that do not print escaped), and what cannot be shown
// as it would be sent is refused, saying where.
func TestCanonical(t *testing.T) {
	for _, tt := range []struct{ name, in, want, err string }{
		{name: "sorted, compact", in: "{ \"b\": [1, 2.50, {\"y\": null, \"x\": true}],\n \"a\": \"é\" }", want: `{"a":"é","b":[1,2.50,{"x":true,"y":null}]}`},
		{name: "empty", in: `{}`, want: `{}`},
		{name: "escapes read", in: `{"\u0061":"\u00e9\/"}`, want: `{"a":"é/"}`},
		{name: "what does not print", in: "{\"k\":\"a\\u001b[2J\\u0085\u202e\\u2028\u200b\\n\\t\\r\u007f\"}", want: `{"k":"a\u001b[2J\u0085\u202e\u2028\u200b\n\t\r\u007f"}`},
		{name: "not UTF-8", in: "{\"k\":\"a\xffb\"}", want: `{"k":"a\ufffdb"}`},
		{name: "outside the BMP", in: "{\"k\":\"😀\U000f0000\"}", want: `{"k":"😀\udb80\udc00"}`},
		{name: "quote and backslash", in: `{"k":"\"\\"}`, want: `{"k":"\"\\"}`},
		{name: "repeated key", in: `{"a":1,"b":2,"a":3}`, err: `the key "a" appears twice in the arguments`},
		{name: "repeated after escape", in: `{"a":1,"\u0061":3}`, err: `the key "a" appears twice`},
		{name: "repeated deep", in: `{"a":[0,{"b":{"c":1,"c":1}}]}`, err: `the key "c" appears twice in the arguments["a"][1]["b"]`},
		{name: "not an object", in: `[1]`, err: "not a JSON object"},
		{name: "not JSON", in: `{"a":`, err: "not JSON"},
		{name: "trailing", in: `{} {}`, err: "more after"},
		{name: "too deep", in: `{"a":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `}`, err: "more than 1000 deep"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical(json.RawMessage(tt.in))
			if tt.err != "" {
				if !errors.Is(err, ErrCannotShow) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Canonical(%q) = %s, %v; want an error saying %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Canonical(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
			if again, err := Canonical(got); err != nil || !bytes.Equal(again, got) {
				t.Errorf("Canonical is not idempotent: %s, then %s, %v", got, again, err)
			}
			var a, b any
			if json.Unmarshal([]byte(tt.in), &a) != nil || json.Unmarshal(got, &b) != nil || !reflect.DeepEqual(a, b) {
				t.Errorf("Canonical(%q) = %s reads as %v, want %v", tt.in, got, b, a)
			}
		})
	}
}

// TestShowArgs: arguments that fit are shown whole, as they are sent;
// longer ones one key a line, each value cut on its own, the short ones
// whole; too many keys for the budget are refused.
func TestShowArgs(t *testing.T) {
	pad := strings.Repeat("x", 400)
	for _, tt := range []struct {
		name, in string
		want     []string // in the text
		err      string
	}{
		{name: "fits", in: `{"a":1,"b":"x"}`, want: []string{`{"a":1,"b":"x"}`}},
		{name: "padding first", in: `{"a":"` + pad + `","b":"/etc/passwd"}`, want: []string{"\n  \"a\": \"xxx", "x…\n", "\n  \"b\": \"/etc/passwd\""}},
		{name: "each cut", in: `{"a":"` + pad + `","b":"` + pad + `"}`, want: []string{"\n  \"a\": \"xxxxxxxxxx", "\n  \"b\": \"xxxxxxxxxx", "…"}},
		{name: "cut whole characters", in: `{"a":"` + strings.Repeat("é", 300) + `"}`, want: []string{`"a": "é`, "é…"}},
		{name: "too many keys", in: `{"` + strings.Repeat("k", 200) + `":1,"` + strings.Repeat("l", 200) + `":2}`, err: "2 keys"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := showArgs(json.RawMessage(tt.in), 300)
			if tt.err != "" {
				if !errors.Is(err, ErrCannotShow) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("showArgs = %q, %v; want an error saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil || len(got) > 300+2*len(cutMark) || !utf8.ValidString(got) {
				t.Fatalf("showArgs = %q (%d bytes), %v", got, len(got), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("showArgs = %q, lacks %q", got, w)
				}
			}
		})
	}
}

// TestConfirmNotAsked: arguments not in canonical form, or with too many
// keys to show, are not asked about.
func TestConfirmNotAsked(t *testing.T) {
	many := map[string]int{}
	for i := range 200 {
		many[fmt.Sprintf("key_%03d", i)] = i
	}
	raw, _ := json.Marshal(many)
	for _, args := range []string{`{"b":1,"a":2}`, `{"a":1,"a":2}`, `{ }`, ``, string(raw)} {
		f := &fakeAsker{answer: decision(AllowOnce)}
		a, err := NewSession(f).Confirm(t.Context(), "s", "t", json.RawMessage(args), "why")
		if a != NotAsked || !errors.Is(err, ErrCannotShow) || f.count() != 0 {
			t.Errorf("Confirm(%.40s) = %q, %v after %d questions; want not asked", args, a, err, f.count())
		}
	}
}

// FuzzShowArgs: for any arguments that [Canonical] takes, the question names
// every top-level key or refuses to ask, in valid UTF-8 and within budget.
func FuzzShowArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"path":"x","pad":"` + strings.Repeat("y", 400) + `","path":"z"}`,
		`{"a":"` + strings.Repeat("é", 300) + `","b":[1,{"c":"\u202e"}]}`, "{\"\xff\":\"\x1b]52;c;\"}"} {
		f.Add([]byte(s), 300)
	}
	f.Fuzz(func(t *testing.T, raw []byte, budget int) {
		budget = 100 + abs(budget)%2000
		canon, err := Canonical(raw)
		if err != nil {
			if !errors.Is(err, ErrCannotShow) {
				t.Fatalf("Canonical error %v does not wrap ErrCannotShow", err)
			}
			return
		}
		if again, err := Canonical(canon); err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("Canonical(%q) = %q, then %q, %v", raw, canon, again, err)
		}
		shown, err := showArgs(canon, budget)
		if err != nil {
			if !errors.Is(err, ErrCannotShow) {
				t.Fatalf("showArgs error %v does not wrap ErrCannotShow", err)
			}
			return
		}
		if !utf8.ValidString(shown) {
			t.Fatalf("showArgs(%q) = %q, not UTF-8", canon, shown)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(canon, &members); err != nil {
			t.Fatal(err)
		}
		if len(shown) > budget+len(members)*len(cutMark) {
			t.Fatalf("showArgs(%q, %d) is %d bytes", canon, budget, len(shown))
		}
		for k := range members {
			if !strings.Contains(shown, quote(k)+":") {
				t.Fatalf("showArgs(%q) = %q does not name key %q", canon, shown, k)
			}
		}
		for _, r := range shown {
			if r != '\n' && !unicode.IsGraphic(r) {
				t.Fatalf("showArgs(%q) = %q holds %U, which does not print", canon, shown, r)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// connect returns the server side of a go-sdk session whose client speaks
// version (the SDK's latest if "") and has handler as its elicitation
// handler (nil: it declares no elicitation).
func connect(t *testing.T, version string, handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ServerSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	srv := mcp.NewServer(&mcp.Implementation{Name: "codebridge"}, nil)
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "agent"}, &mcp.ClientOptions{ElicitationHandler: handler})
	cs, err := cl.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return ss
}

// viaCall is a [Route] that answers every form question with answer, as
// a run's tool call does for a client speaking MCP 2026-07-28.
type viaCall struct {
	Sampler
	RootsLister
	answer func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
}

func (v viaCall) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return v.answer(ctx, &mcp.ElicitRequest{Params: p})
}

// TestForClient: a go-sdk client with an elicitation handler declares the
// capability and is asked, and its answer passes the SDK's check against
// the form's schema; one without it cannot be asked, saying why. A client
// speaking a protocol version in which a server may not ask during a call
// is asked through the run's call instead ([Session.Via]).
func TestForClient(t *testing.T) {
	var seen *mcp.ElicitParams
	answer := func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		seen = r.Params
		return decision(AllowOnce), nil
	}
	for _, tt := range []struct {
		version string
		handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		whyNot  string
	}{
		{"2025-11-25", nil, "it did not declare the MCP elicitation capability"},
		{"2025-11-25", answer, ""},
		{"2025-06-18", answer, ""},
		{"2026-07-28", answer, ""},
	} {
		ss := connect(t, tt.version, tt.handler)
		s := ForClient(ss)
		if MultiRoundTrip(ss) != (tt.version >= "2026-07-28") {
			t.Errorf("%s: MultiRoundTrip = %v", tt.version, MultiRoundTrip(ss))
		}
		if MultiRoundTrip(ss) {
			s = s.Via(viaCall{answer: answer})
		}
		if got := s.WhyNot(); !strings.HasPrefix(got, tt.whyNot) || (got == "") != (tt.whyNot == "") || s.CanAsk() != (got == "") {
			t.Errorf("%s, handler %v: WhyNot = %q, want %q", tt.version, tt.handler != nil, got, tt.whyNot)
		}
		if !s.CanAsk() {
			continue
		}
		seen = nil
		got, err := s.Confirm(t.Context(), "memory", "create_entities", json.RawMessage(`{}`), "why")
		if err != nil || got != AllowOnce || seen == nil || seen.Mode != "form" {
			t.Errorf("%s: Confirm = %q, %v; the client saw %+v", tt.version, got, err, seen)
		}
	}
}
