package settings

import (
	"errors"
	"fmt"
	"testing"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/docker"
	"github.com/codebridge-mcp/codebridge/runtime/podman"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// TestExplain: the lower layers' typed errors are worded with the settings
// that help, inside whatever wraps them; other errors keep their words.
func TestExplain(t *testing.T) {
	pull := errors.New("manifest unknown")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"sessions running code", &sandbox.SessionLimitError{Limit: 2, Busy: true},
			"all 2 sandbox sessions are running code; try again when one finishes, or raise MCP_BRIDGE_MAX_SESSIONS"},
		{"sessions in use", &sandbox.SessionLimitError{Limit: 3},
			"all 3 sandbox sessions are in use; try again in a moment, or raise MCP_BRIDGE_MAX_SESSIONS"},
		{"configured image", fmt.Errorf("cannot start a sandbox container: %w", &podman.ImageError{Image: "localhost/x:1", Err: pull, Hint: podman.SetupHint}),
			"cannot start a sandbox container: sandbox image localhost/x:1 (MCP_BRIDGE_IMAGE) does not exist and could not be pulled: manifest unknown: build it (" +
				podman.SetupHint + ") or set MCP_BRIDGE_IMAGE to a local image with python3"},
		{"no image", fmt.Errorf("cannot start a sandbox container: %w", &podman.ImageError{Err: pull, Hint: podman.SetupHint}),
			"cannot start a sandbox container: no sandbox image: " + confine.DefaultImage + " does not exist and pulling " + confine.FallbackImage +
				" failed: manifest unknown: build it (" + podman.SetupHint + "; no registry needed) or set MCP_BRIDGE_IMAGE"},
		{"no image in Docker", fmt.Errorf("cannot start a sandbox container: %w", &docker.ImageError{Err: pull, Hint: docker.SetupHint}),
			"cannot start a sandbox container: no sandbox image: " + confine.DefaultImage + " does not exist and pulling " + confine.FallbackImage +
				" failed: manifest unknown: build it (" + docker.SetupHint + "; no registry needed) or set MCP_BRIDGE_IMAGE"},
		{"other", errors.New("podman API not reachable"), "podman API not reachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Explain(tt.err); got != tt.want {
				t.Errorf("Explain =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	if !errors.Is(&podman.ImageError{Err: pull}, podman.ErrUnavailable) {
		t.Error("an ImageError does not match podman.ErrUnavailable")
	}
}

func TestExplainProblem(t *testing.T) {
	p := discovery.Problem{Path: "/c/a.json", Server: "me", Message: "skipped: " + discovery.ErrSelfServer.Error(), Warning: true, Err: discovery.ErrSelfServer}
	want := "skipped: it would start codebridge inside codebridge; remove it, or set MCP_BRIDGE_ALLOW_SELF_SERVER=1 to nest bridges on purpose"
	if got := ExplainProblem(p).Message; got != want {
		t.Errorf("ExplainProblem = %q, want %q", got, want)
	}
	other := discovery.Problem{Message: "bad JSON"}
	if got := ExplainProblem(other); got != other {
		t.Errorf("ExplainProblem of a problem without a cause = %+v", got)
	}
}
