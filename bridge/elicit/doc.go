// Package elicit asks the person behind the agent's client, through MCP
// elicitation: the one path by which codebridge puts a question to them. It
// carries the approvals policy asks for ([Session.Confirm]) and passes on
// what downstream servers ask of the client, named after the server: their
// questions ([Session.Forward]), sampling requests ([Session.CreateMessage]),
// roots ([Session.ListRoots]) and log messages ([Session.Log]), as far as the
// client declared them ([Passthrough]); and it sends the person to a page
// codebridge needs them to open, such as a server's sign-in, where the client
// declared URL-mode elicitation ([Session.OpenURL]). A [Session] belongs to one MCP
// session: it asks one question at a time and remembers what was allowed for
// the session. A client speaking MCP 2026-07-28 or later takes no requests
// from the server, so each run's questions go through its tool call instead
// ([Session.Via], a [Route]).
package elicit
