package main

import (
	"os"
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
