package bridge

import (
	"context"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// Runner runs one program in a sandbox. runtime/podman.Sandbox is the real one;
// tests of the bridge use a fake.
//
// Run never returns a nil Result: failures of the code or of the sandbox are
// described by Result.Error. The error is non-nil only when ctx ended first.
type Runner interface {
	Run(ctx context.Context, p python.Program, h python.Host, timeout time.Duration) (*python.Result, error)
}
