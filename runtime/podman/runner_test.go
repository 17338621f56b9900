package podman_test

import (
	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/runtime/podman"
)

var _ bridge.Runner = (*podman.Sandbox)(nil)
