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
