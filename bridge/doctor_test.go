package bridge

import (
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
)

// TestDoctorRuntime: the runtime line says whether the sandbox ran on
// gVisor's kernel, and whether that was asked for.
func TestDoctorRuntime(t *testing.T) {
	const gvisorLog, linux = `6.18.0 Starting gVisor...`, `6.18.0 `
	podman, docker := enginekit.Description{Name: "Podman", Runtime: "runsc"}, enginekit.Description{Name: "Docker", Runtime: "runsc"}
	for _, tt := range []struct {
		name, asked string
		info        enginekit.Description
		kernel      string
		level, want string
	}{
		{"runc", "", enginekit.Description{Name: "Podman", Runtime: "runc"}, linux, FindOK, "runc: the sandbox shares this host's Linux kernel (6.18.0)"},
		{"runsc asked", "runsc", podman, gvisorLog, FindOK, "runsc: the sandbox runs on gVisor's kernel"},
		{"runsc asked, not run", "runsc", enginekit.Description{Name: "Podman", Runtime: "runc"}, linux, FindFail, "but the sandbox ran on this host's Linux 6.18.0"},
		{"Podman's default runsc", "", podman, gvisorLog, FindWarn, "MCP_BRIDGE_RUNTIME does not say so"},
		{"Docker's default runsc", "", docker, gvisorLog, FindOK, "runsc: the sandbox runs on gVisor's kernel"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := doctorRuntime(tt.asked, tt.info, tt.kernel)
			if f.Level != tt.level || !strings.Contains(f.Detail, tt.want) {
				t.Errorf("doctorRuntime = %+v, want %s containing %q", f, tt.level, tt.want)
			}
		})
	}
}
