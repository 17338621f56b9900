package protocol

import "errors"

// Code says why a request failed, in a word code can branch on: the sandbox
// raises the failure as MCPError with this code.
type Code string

// The codes the host sends. The sandbox adds tool_error itself (a tool's
// result marked isError), and the Python helpers use the same words for what
// they refuse before sending a request.
const (
	CodeUnknownServer   Code = "unknown_server"    // no server of that name or alias, or one that cannot be used
	CodeUnknownTool     Code = "unknown_tool"      // the server has no such tool (or its policy hides it)
	CodePolicyDenied    Code = "policy_denied"     // the policy blocks the tool
	CodeDeclined        Code = "declined"          // the call needed the person's approval and did not get it
	CodeBadArguments    Code = "bad_arguments"     // the parameters or the tool's arguments are wrong
	CodeTooLarge        Code = "too_large"         // over a size limit
	CodeConflict        Code = "conflict"          // a memory changed since it was loaded
	CodeServerFailed    Code = "server_failed"     // the server did not start, or exited
	CodeTimeout         Code = "timeout"           // the server did not answer in time
	CodeTooManyRequests Code = "too_many_requests" // the run has too many requests waiting
	CodeTooManyCalls    Code = "too_many_calls"    // the run has made the most tool calls a run may make (max_calls_per_run)
	CodeBusy            Code = "busy"              // the server has its most calls in flight and waiting (maxConcurrency, server_queue)
	CodeQuarantined     Code = "quarantined"       // the tool's definition changed since it was pinned (bridge/manifest)
	CodeUnsupported     Code = "unsupported"       // the server does not offer what was asked (resources, prompts)
	CodeAuthRequired    Code = "auth_required"     // the server needs the user to sign in: codebridge login NAME (bridge/oauth)
	CodeInternal        Code = "internal"          // anything else
)

// Codes lists every code the host sends.
var Codes = []Code{
	CodeUnknownServer, CodeUnknownTool, CodePolicyDenied, CodeDeclined, CodeBadArguments, CodeTooLarge,
	CodeConflict, CodeServerFailed, CodeTimeout, CodeTooManyRequests, CodeTooManyCalls, CodeBusy, CodeQuarantined,
	CodeUnsupported, CodeAuthRequired, CodeInternal,
}

// CodedError is an error that carries the [Code] the sandbox sees. An error
// without one is sent as [CodeInternal].
type CodedError interface {
	error
	RPCCode() Code
}

// Error is a failed [Request]: the error of a 'R' frame's [Reply], and the
// error a [Handler] returns to choose its code and data.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"` // e.g. {"suggestions": [...]} for a misspelt name
}

func (e *Error) Error() string { return e.Message }

// RPCCode implements [CodedError].
func (e *Error) RPCCode() Code { return e.Code }

// CodeOf returns the code of the first [CodedError] in err's chain, else
// [CodeInternal].
func CodeOf(err error) Code {
	if coded, ok := errors.AsType[CodedError](err); ok {
		return coded.RPCCode()
	}
	return CodeInternal
}

// ErrorOf is err as the sandbox receives it: its message, its code (see
// [CodeOf]) and the data of an [Error] in its chain.
func ErrorOf(err error) *Error {
	e := &Error{Code: CodeOf(err), Message: err.Error()}
	if pe, ok := errors.AsType[*Error](err); ok {
		e.Data = pe.Data
	}
	return e
}
