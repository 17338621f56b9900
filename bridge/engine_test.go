package bridge

import (
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

func TestChooseEngine(t *testing.T) {
	yes, no := func() bool { return true }, func() bool { return false }
	for _, tt := range []struct {
		setting        string
		podman, docker func() bool
		want           string
	}{
		{settings.EngineAuto, yes, yes, settings.EnginePodman},
		{settings.EngineAuto, no, yes, settings.EngineDocker},
		{settings.EngineAuto, no, no, settings.EnginePodman}, // its error says how to install it
		{settings.EngineDocker, yes, no, settings.EngineDocker},
		{settings.EnginePodman, no, yes, settings.EnginePodman},
	} {
		got, why := chooseEngine(tt.setting, tt.podman, tt.docker)
		if got != tt.want || why == "" {
			t.Errorf("chooseEngine(%s, podman %v, docker %v) = %s (%s), want %s", tt.setting, tt.podman(), tt.docker(), got, why, tt.want)
		}
	}
}
