package elicit

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

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
			got, err := NewSession(f).Confirm(ctx, "memory", "create_entities", json.RawMessage(`{"entities": [1]}`), `it matches "create_*" in X`)
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
		wg.Go(func() { answers[i], _ = s.Confirm(t.Context(), "memory", "create_entities", nil, "why") })
	}
	wg.Wait()
	if n := f.count(); n != 1 {
		t.Errorf("asked %d times for three calls, want once: %v", n, answers)
	}
	if a, _ := s.Confirm(t.Context(), "memory", "delete_entities", nil, "why"); a != AllowSession || f.count() != 2 {
		t.Errorf("another tool: %q after %d questions, want asked again", a, f.count())
	}
	if a, _ := NewSession(f).Confirm(t.Context(), "memory", "create_entities", nil, "why"); a != AllowSession || f.count() != 3 {
		t.Errorf("another session: %q after %d questions, want asked again", a, f.count())
	}
	var none *Session
	if a, _ := NewSession(nil).Confirm(t.Context(), "m", "t", nil, "why"); a != CannotAsk || none.CanAsk() {
		t.Errorf("a client that cannot ask: %q", a)
	}
}

func TestShorten(t *testing.T) {
	long := `{"text": "` + strings.Repeat("é", 400) + `"}`
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"{\n  \"a\": 1\n}", `{"a":1}`},
		{"not json\n here", "not json here"},
	} {
		if got := Shorten(json.RawMessage(tt.in), 300); got != tt.want {
			t.Errorf("Shorten(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	got := Shorten(json.RawMessage(long), 300)
	if len(got) > 300+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, `{"text":"é`) {
		t.Errorf("Shorten(long) = %q", got)
	}
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

// viaCall is a [Channel] that answers every form question with answer, as
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
