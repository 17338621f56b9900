package server

import (
	"context"

	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// Runner runs programs in sandbox sessions. runtime/sandbox.Manager is the
// real one; tests of the bridge use a fake.
//
// Run never returns a nil Result: failures of the code or of the sandbox are
// described by Result.Error. The error is non-nil only when ctx ended first.
// End ends a session, e.g. when its MCP session closes; Detach leaves it to
// its handle (see [sandbox.Manager.Detach]), when its MCP session was closed
// only to make room for others.
type Runner interface {
	Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error)
	End(ctx context.Context, session string)
	Detach(ctx context.Context, session string)
}
