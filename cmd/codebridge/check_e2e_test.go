package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkServers are the servers of the readiness tests: a real npm server
// with a policy, one that cannot start, and one disabled.
func checkServers(t *testing.T) map[string]any {
	everything := npmServers(t)["everything"].(map[string]any)
	everything["tools"] = map[string]any{"deny": []string{"get-env"}, "confirm": []string{"get-sum"}}
	return map[string]any{
		"everything": everything,
		"broken":     map[string]any{"command": "/nonexistent/bin/server"},
		"off":        map[string]any{"command": "x", "disabled": true},
	}
}

// TestCheckToolsEndToEnd: check_tools in the sandbox and codebridge check
// on the command line answer each tool's readiness the same way, from the
// real server, without calling anything.
func TestCheckToolsEndToEnd(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "servers.json", checkServers(t))
	env := bridgeEnv(t, dir)
	want := [][2]string{
		{"everything.echo", "ready"},
		{"everything.get-sum", "ready"},
		{"everything.get-env", "denied"},
		{"everything.nope", "not_found"},
		{"broken.x", "failed"},
		{"off.x", "not_configured"},
		{"nosuch.x", "not_configured"},
		{"everything", "ready"},
	}
	var names []string
	for _, w := range want {
		names = append(names, w[0])
	}

	t.Run("sandbox", func(t *testing.T) {
		cs, _ := session(t, env)
		raw, _ := json.Marshal(names)
		out := mustRun(t, cs, `import json
r = await check_tools(`+string(raw)+`)
print(json.dumps(r))`)
		var got []struct{ Server, Tool, Status, Message string }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var pairs [][2]string
		for _, c := range got {
			name := c.Server
			if c.Tool != "" {
				name += "." + c.Tool
			}
			pairs = append(pairs, [2]string{name, c.Status})
		}
		if diff := cmp.Diff(want, pairs); diff != "" {
			t.Errorf("check_tools (-want +got):\n%s\n%s", diff, out)
		}
		if len(got) == len(want) && !strings.Contains(got[1].Message, "asks the person first") {
			t.Errorf("get-sum, which the policy confirms: message %q, want it to say a call asks first", got[1].Message)
		}
	})

	t.Run("cli", func(t *testing.T) {
		stdout, stderr, code := runCLI(t, env, "", append([]string{"check", "--json"}, names...)...)
		if code != 1 {
			t.Errorf("exit status %d, want 1 (some tools are not ready); stderr:\n%s", code, stderr)
		}
		var pairs [][2]string
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var c struct{ Server, Tool, Status string }
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatalf("%v: %q", err, line)
			}
			name := c.Server
			if c.Tool != "" {
				name += "." + c.Tool
			}
			pairs = append(pairs, [2]string{name, c.Status})
		}
		if diff := cmp.Diff(want, pairs); diff != "" {
			t.Errorf("codebridge check (-want +got):\n%s", diff)
		}
		if _, _, code := runCLI(t, env, "", "check", "everything.echo"); code != 0 {
			t.Errorf("check of a ready tool: exit status %d, want 0", code)
		}
	})
}
