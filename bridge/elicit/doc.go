// Package elicit asks the person behind the agent's client, through MCP
// elicitation: the one path by which codebridge puts a question to them.
// Today it carries the approvals policy asks for ([Session.Confirm]); a
// downstream server's own elicitation requests are to be forwarded through
// the same [Session.Elicit]. A [Session] belongs to one MCP session: it asks
// one question at a time and remembers what was allowed for the session.
package elicit
