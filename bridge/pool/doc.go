// Package pool keeps one MCP client per configured downstream server: started on
// first use, exactly once, kept warm, stopped when idle or removed from the
// configuration, and restarted after a crash.
//
// A [Pool] is fed the configured servers with [Pool.Update] and used through
// [Pool.Tools], [Pool.Call] and [Pool.AllTools], and for a server's resources
// and prompts [Pool.Resources], [Pool.ReadResource], [Pool.Prompts] and the
// like, which ask only a server that declared them ([ErrUnsupported]);
// [Pool.Status] describes every server for listings, and [Pool.Close] stops
// them all.
//
// Stdio servers run with a small inherited environment (PATH, HOME, locale,
// temporary directory, certificate and proxy settings, npm_config_*) plus the
// "env" of their configuration, in their own process group, and on Linux die
// with codebridge. Their last stderr lines are kept and shown when they fail
// to start or exit.
//
// What a server asks of its client while it serves a call (elicitation,
// sampling, roots) and its log messages go to the [Peer] of the call that
// [Pool.CallFor] made, the most recent one in flight, as long as every call
// in flight to the server was made for one MCP session ([Peer.Principal]):
// a request does not say which call it serves, so with calls of several
// sessions in flight it is refused ([ErrSessionsShareServer]) and log
// messages are dropped ([ServerStatus.DroppedLogs]); the questions of a
// server speaking MCP 2026-07-28, asked in a call's result, go to that
// call's peer. The pool declares these
// capabilities downstream only as [Pool.SetClientCapabilities] says the
// agent's client did.
//
// A server's session is sent at most its definition's MaxConcurrency tool
// calls at once (else [Options.Concurrency]), whoever makes them: the rest
// wait for a slot in the order they came, for as long as their context
// allows, and past [Options.Queue] of them waiting a call fails at once,
// unsent, with a [BusyError].
//
// A server that exits while idle is noticed at once and started again on its
// next use. A request that was in flight when it exited fails with
// [ErrServerExited]; the pool does not repeat tool calls, which may not be
// safe to repeat, but does repeat once a failed tools/list and a failed
// resource or prompt request, which only read.
package pool
