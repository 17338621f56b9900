package settings

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// Explain returns err's message for the user. The lower layers know nothing
// of codebridge's settings, so where their typed errors say that a setting
// would help, their words are replaced, inside the message of every error
// that wraps them, by words that name the setting.
func Explain(err error) string {
	msg := err.Error()
	var limit *sandbox.SessionLimitError
	if errors.As(err, &limit) {
		msg = reword(msg, limit, sessionLimit(limit))
	}
	var runs *sandbox.RunLimitError
	if errors.As(err, &runs) {
		msg = reword(msg, runs, fmt.Sprintf("all %d run slots were busy for the whole %s of this run's time limit; try again when a run finishes, or raise MCP_BRIDGE_MAX_RUNS",
			runs.Limit, runs.Waited.Round(time.Millisecond)))
	}
	var image *confine.ImageError
	if errors.As(err, &image) {
		msg = reword(msg, image, imageMissing(image))
	}
	if errors.Is(err, discovery.ErrSelfServer) {
		msg = reword(msg, discovery.ErrSelfServer, "it would start codebridge inside codebridge; remove it, or set MCP_BRIDGE_ALLOW_SELF_SERVER=1 to nest bridges on purpose")
	}
	return msg
}

// ExplainProblem returns p with its message worded as [Explain] words its
// typed cause, if it has one.
func ExplainProblem(p discovery.Problem) discovery.Problem {
	if p.Err != nil {
		p.Message = reword(p.Message, p.Err, Explain(p.Err))
	}
	return p
}

// reword replaces the message of err, a typed error, within msg.
func reword(msg string, err error, words string) string {
	return strings.Replace(msg, err.Error(), words, 1)
}

func sessionLimit(e *sandbox.SessionLimitError) string {
	if e.Busy {
		return fmt.Sprintf("all %d sandbox sessions are running code; try again when one finishes, or raise MCP_BRIDGE_MAX_SESSIONS", e.Limit)
	}
	return fmt.Sprintf("all %d sandbox sessions are in use; try again in a moment, or raise MCP_BRIDGE_MAX_SESSIONS", e.Limit)
}

// imageMissing words an engine's missing image: the configured one
// (MCP_BRIDGE_IMAGE), or the default; the error's hint says how that
// engine's images are built.
func imageMissing(e *confine.ImageError) string {
	if e.Image != "" {
		return fmt.Sprintf("sandbox image %s (MCP_BRIDGE_IMAGE) does not exist and could not be pulled: %v: build it (%s) or set MCP_BRIDGE_IMAGE to a local image with python3",
			e.Image, e.Err, e.Hint)
	}
	return fmt.Sprintf("no sandbox image: %s does not exist and pulling %s failed: %v: build it (%s; no registry needed) or set MCP_BRIDGE_IMAGE",
		confine.DefaultImage, confine.FallbackImage, e.Err, e.Hint)
}
