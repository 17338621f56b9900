package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// TestMemoryErrorsHidePath: an error of the store that code gets does not
// tell it where the host keeps its state (F21).
func TestMemoryErrorsHidePath(t *testing.T) {
	state := t.TempDir()
	d := newDirectory(&recordingPool{}, 4<<20, nil)
	d.store = memory.New(state)
	h := &host{dir: d}
	ctx := context.Background()

	// A damaged memory file.
	sum := sha256.Sum256([]byte("k"))
	if err := os.MkdirAll(filepath.Join(state, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "memory", hex.EncodeToString(sum[:])+".json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, loadErr := h.MemoryLoad(ctx, protocol.KeyParams{Key: "k"})
	// A folder that cannot be written: tools is a file.
	if err := os.WriteFile(filepath.Join(state, "tools"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, saveErr := h.ToolSave(ctx, protocol.ToolSaveParams{Name: "f", Source: "def f():\n    pass\n"})
	_, listErr := h.ToolList(ctx, protocol.NoParams{})
	for name, err := range map[string]error{"load": loadErr, "tool save": saveErr, "tool list": listErr} {
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		msg := err.Error()
		if b, e := json.Marshal(err); e == nil {
			msg += string(b)
		}
		if strings.Contains(msg, state) {
			t.Errorf("%s: the error names the state directory: %s", name, msg)
		}
	}
}

// TestMemoryChangesAudited: saves and deletes of memories and saved helpers
// are audit records of their own kinds, refusals included (F9).
func TestMemoryChangesAudited(t *testing.T) {
	d := newDirectory(&recordingPool{}, 4<<20, nil)
	d.store = memory.New(t.TempDir())
	dir := t.TempDir()
	d.audit = audit.New(dir, audit.Options{})
	h := &host{dir: d, session: "s1", run: 3}
	ctx := context.Background()
	h.MemorySave(ctx, protocol.MemorySaveParams{Key: "plan", Value: json.RawMessage(`[1]`)})
	h.MemoryDelete(ctx, protocol.KeyParams{Key: "plan"})
	h.ToolSave(ctx, protocol.ToolSaveParams{Name: "clean", Source: "def clean(x):\n    return x\n"})
	h.ToolSave(ctx, protocol.ToolSaveParams{Name: "print", Source: "def print():\n    pass\n"})
	h.ToolDelete(ctx, protocol.NameParams{Name: "clean"})
	recs, _, err := audit.Tail(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, strings.Join([]string{r.Kind, r.Tool, r.Outcome, r.Session}, " "))
	}
	want := []string{
		"memory_save plan ok s1", "memory_delete plan ok s1",
		"tool_save clean ok s1", "tool_save print bad_arguments s1", "tool_delete clean ok s1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
