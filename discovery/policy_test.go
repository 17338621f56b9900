package discovery

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolPolicyLoads(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"f.json": `{"mcpServers": {
  "fs": {"command": "x", "tools": {"allow": ["read_*", "list"], "deny": ["*secret*"]}, "readOnly": true},
  "rw": {"command": "x", "readOnly": false, "tools": {"allow": [], "deny": []}},
  "plain": {"command": "x"},
  "ask": {"command": "x", "tools": {"confirm": ["send_*"]}, "confirmWrites": true}
}}`})
	cfg := Load(dir, nil, testEnv)
	checkProblems(t, cfg.Problems, "", nil)
	yes, no := true, false
	want := map[string]ToolPolicy{
		"fs":    {Allow: []string{"read_*", "list"}, Deny: []string{"*secret*"}, ReadOnly: &yes},
		"rw":    {ReadOnly: &no}, // empty lists mean none, as missing ones do
		"plain": {},
		"ask":   {Confirm: []string{"send_*"}, ConfirmWrites: &yes},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, cfg.Server(name).Tools); diff != "" {
			t.Errorf("%s policy (-want +got):\n%s", name, diff)
		}
	}
}

// TestToolPolicyInvalid: a policy codebridge cannot read makes the entry
// invalid, at the right place, rather than admitting every tool.
func TestToolPolicyInvalid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	writeFiles(t, dir, map[string]string{"f.json": `{"mcpServers": {
  "glob": {"command": "x", "tools": {"deny": ["ok", "[unclosed"]}},
  "notobj": {"command": "x", "tools": ["a"]},
  "notarr": {"command": "x", "tools": {"allow": "read_*"}},
  "notstr": {"command": "x", "tools": {"deny": [1]}},
  "typo": {"command": "x", "tools": {"denied": ["a"]}},
  "empty": {"command": "x", "tools": {"allow": [""]}},
  "ro": {"command": "x", "readOnly": "yes"},
  "spelling": {"command": "x", "read_only": true},
  "cw": {"command": "x", "confirmWrites": 1},
  "cwspelling": {"command": "x", "confirm_writes": true},
  "confirm": {"command": "x", "tools": {"confirm": "send_*"}},
  "good": {"command": "x", "tools": {"deny": ["a\\*b"]}}
}}`})
	cfg := Load(dir, nil, testEnv)
	if diff := cmp.Diff([]string{"good"}, cfg.Names()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	checkProblems(t, cfg.Problems, path, []Problem{
		{Server: "glob", Line: 2, Column: 53, Message: `tools.deny[1]: "[unclosed" is not a valid glob`},
		{Server: "notobj", Line: 3, Column: 30, Message: `"tools" must be an object`},
		{Server: "notarr", Line: 4, Column: 40, Message: `"tools.allow" must be an array`},
		{Server: "notstr", Line: 5, Column: 49, Message: "tools.deny[0] must be a string, found number 1"},
		{Server: "typo", Line: 6, Column: 38, Message: `unknown key "denied" in "tools": use "allow", "deny" and "confirm"`},
		{Server: "empty", Line: 7, Column: 49, Message: "tools.allow[0]: an empty pattern"},
		{Server: "ro", Line: 8, Column: 26, Message: `"readOnly" must be true or false, found string "yes"`},
		{Server: "spelling", Line: 9, Column: 32, Message: `unknown key "read_only": write "readOnly"`},
		{Server: "cw", Line: 10, Column: 26, Message: `"confirmWrites" must be true or false, found number 1`},
		{Server: "cwspelling", Line: 11, Column: 34, Message: `unknown key "confirm_writes": write "confirmWrites"`},
		{Server: "confirm", Line: 12, Column: 41, Message: `"tools.confirm" must be an array`},
	})
}

// TestToolPolicyEdit: a change to the policy alone is a change of the
// server (so a watcher publishes it) but not of its endpoint (so a pool
// keeps the process).
func TestToolPolicyEdit(t *testing.T) {
	yes := true
	a := &Server{Name: "s", Transport: Stdio, Command: "x"}
	for _, p := range []ToolPolicy{{Deny: []string{"a"}}, {Allow: []string{"a"}}, {ReadOnly: &yes}, {Confirm: []string{"a"}}, {ConfirmWrites: &yes}} {
		b := *a
		b.Tools = p
		if a.Equal(&b) {
			t.Errorf("policy %+v: Equal = true, want false", p)
		}
		if !a.SameEndpoint(&b) {
			t.Errorf("policy %+v: SameEndpoint = false, want true", p)
		}
		if _, _, changed := Diff(&Config{Servers: []*Server{a}}, &Config{Servers: []*Server{&b}}); len(changed) != 1 {
			t.Errorf("policy %+v: Diff changed = %v, want [s]", p, changed)
		}
	}
}

func TestMatchTool(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"echo", "echo", true},
		{"echo", "echo2", false},
		{"get-*", "get-sum", true},
		{"*delete*", "delete_entities", true},
		{"read_?", "read_a", true},
		{"a\\*b", "a*b", true},
		{"a\\*b", "axb", false},
	} {
		if got := MatchTool(tt.pattern, tt.name); got != tt.want {
			t.Errorf("MatchTool(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}
