package main

import (
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestMissingSyscall: code calling pidfd_open, which Linux has and the
// gVisor of Debian's runsc (2022-12-19) lacks, works under runc and, under
// gVisor (MCP_BRIDGE_RUNTIME=runsc, scripts/test.sh's gVisor phase), fails
// with an error that says gVisor lacks the call.
func TestMissingSyscall(t *testing.T) {
	requirePodman(t)
	cs, _ := session(t, bridgeEnv(t, t.TempDir()))
	r := runPython(t, cs, map[string]any{"code": "import os\nos.close(os.pidfd_open(os.getpid()))\nprint('ok')"})
	if !confine.GVisor(testenv.Runtime()) {
		if r.IsError || r.Out.Stdout != "ok\n" {
			t.Errorf("pidfd_open on Linux: %s", r.Text)
		}
		return
	}
	for _, want := range []string{"[Errno 38] Function not implemented", "this sandbox runs under gVisor", "MCP_BRIDGE_RUNTIME=runsc"} {
		if !r.IsError || !strings.Contains(r.Text, want) {
			t.Errorf("pidfd_open under gVisor: want an error saying %q, got:\n%s", want, r.Text)
		}
	}
}
