package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// TestConfirmSaveTool: with confirm_save_tool on, a helper is saved only
// when the person allows it, after a question that shows its name,
// description and whole source, escaped; a declined save, or one that
// cannot be asked, is refused saying why and which setting asks; each is
// audited with the answer. With the setting off nothing is asked.
func TestConfirmSaveTool(t *testing.T) {
	const src = "def clean(x):\n    return x  # \u202e\x1b[2J\n"
	tests := []struct {
		name    string
		on      bool
		asker   elicit.Asker // nil: a client without elicitation
		saved   bool
		says    string // in the refusal
		confirm string // in the audit record
	}{
		{"accepted", true, &fakeAsker{answer: choose(elicit.AllowOnce)}, true, "", "allow once"},
		{"declined", true, &fakeAsker{answer: choose(elicit.Decline)}, false, `the person declined saving helper "clean"`, "decline"},
		{"dismissed", true, &fakeAsker{answer: &mcp.ElicitResult{Action: "cancel"}}, false, "dismissed the question", "cancel"},
		{"no elicitation", true, nil, false, "confirm_save_tool", "cannot ask"},
		{"setting off", false, &fakeAsker{}, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, auditDir := memory.New(t.TempDir()), t.TempDir()
			d := New(&recordingPool{}, Options{Store: store, Audit: audit.New(auditDir, audit.Options{}), ConfirmSaveTool: tt.on})
			var ask *elicit.Session
			if tt.asker != nil {
				ask = elicit.NewSession(tt.asker)
			} else {
				ask = elicit.NewSession(nil)
			}
			h := d.host(Run{Session: "s", Run: 1, Ask: ask})
			_, err := h.ToolSave(t.Context(), protocol.ToolSaveParams{Name: "clean", Description: "Tidies\nx.", Source: src})
			var pe *protocol.Error
			switch {
			case tt.says == "" && err != nil:
				t.Fatalf("save: %v, want it saved", err)
			case tt.says != "" && (!errors.As(err, &pe) || pe.Code != protocol.CodeDeclined || !strings.Contains(pe.Message, tt.says)):
				t.Fatalf("save: %v, want declined saying %q", err, tt.says)
			}
			if tt.asker == nil && !strings.Contains(pe.Message, "elicitation") {
				t.Errorf("refusal %q does not say the client cannot ask", pe.Message)
			}
			tools, err := store.Tools()
			if err != nil {
				t.Fatal(err)
			}
			if got := len(tools) == 1 && tools[0].Source == src; got != tt.saved {
				t.Errorf("saved = %v (%d helpers), want %v", got, len(tools), tt.saved)
			}
			if f, ok := tt.asker.(*fakeAsker); ok {
				q := f.questions()
				switch {
				case !tt.on && len(q) != 0:
					t.Errorf("asked %q with the setting off", q)
				case tt.on && len(q) != 1:
					t.Errorf("%d questions, want 1", len(q))
				case tt.on:
					for _, want := range []string{`"clean"`, `"Tidies\nx."`, "\n  | def clean(x):\n  |     return x  # \\u202e\\u001b[2J\n", "confirm_save_tool"} {
						if !strings.Contains(q[0], want) {
							t.Errorf("question %q lacks %q", q[0], want)
						}
					}
					if strings.ContainsAny(q[0], "\u202e\x1b") {
						t.Errorf("question %q holds the source's control characters unescaped", q[0])
					}
				}
			}
			recs, _, err := audit.Tail(auditDir, 0, nil)
			if err != nil || len(recs) != 1 {
				t.Fatalf("%d audit records, %v", len(recs), err)
			}
			if r := recs[0]; r.Kind != audit.KindToolSave || r.Tool != "clean" || r.Confirm != tt.confirm || (r.Outcome == audit.OutcomeOK) != tt.saved {
				t.Errorf("audit record %+v, want tool_save of clean, confirm %q, ok %v", r, tt.confirm, tt.saved)
			}
		})
	}
}

// TestConfirmSaveToolTooLong: a source too long to show whole is not put
// to the person (they could not see what they allow) and not saved.
func TestConfirmSaveToolTooLong(t *testing.T) {
	store := memory.New(t.TempDir())
	d := New(&recordingPool{}, Options{Store: store, ConfirmSaveTool: true})
	f := &fakeAsker{answer: choose(elicit.AllowOnce)}
	h := d.host(Run{Session: "s", Run: 1, Ask: elicit.NewSession(f)})
	src := "def big():\n" + strings.Repeat("    x = 1\n", 2000)
	_, err := h.ToolSave(t.Context(), protocol.ToolSaveParams{Name: "big", Source: src})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeTooLarge || !strings.Contains(pe.Message, "confirm_save_tool") {
		t.Fatalf("save: %v, want too_large naming confirm_save_tool", err)
	}
	if q := f.questions(); len(q) != 0 {
		t.Errorf("asked %d questions, want none", len(q))
	}
	if tools, _ := store.Tools(); len(tools) != 0 {
		t.Errorf("saved %d helpers", len(tools))
	}
}
