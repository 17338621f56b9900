package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeText replaces the file at path with text.
func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// noteInNewBridge starts a codebridge with env, has code call
// notes.note(text) on the pin test server, checks that it was noted, and
// stops that codebridge, so the next one reads the pins anew.
func noteInNewBridge(t *testing.T, env []string, text string) {
	t.Helper()
	cs, _ := session(t, env)
	code := `print(await mcp_notes.note(text="` + text + `"))`
	if out := mustRun(t, cs, code); !strings.Contains(out, "noted: "+text) {
		t.Fatalf("calling notes.note in a new codebridge: %q, want it noted", out)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("stopping the codebridge: %v", err)
	}
}

// notesServer configures the pin test server (runPinServer) as notes in a
// config folder of its own, its description read from descFile, which
// holds "Adds a note to the notebook."; env is codebridge's, with a state
// folder of its own (state). noteInNewBridge then pins the tool.
func notesServer(t *testing.T) (env []string, descFile, state string) {
	t.Helper()
	dir, state := t.TempDir(), t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	descFile = filepath.Join(t.TempDir(), "description")
	writeText(t, descFile, "Adds a note to the notebook.")
	writeServers(t, dir, "notes.json", map[string]any{
		"notes": map[string]any{"command": exe, "args": []string{"-test.run=^$"},
			"env": map[string]string{pinServerEnv: "1", pinServerDescEnv: descFile}},
	})
	return append(bridgeEnv(t, dir), "MCP_BRIDGE_STATE_DIR="+state), descFile, state
}
