// Package lane serves the downstream servers to MCP clients in the lanes
// besides run_python's (bridge/server, the code lane): the tools lane, every
// downstream tool, resource and prompt served directly under a name that
// says its server, and the search lane, a few tools that find, describe and
// call them. Each lane is a go-sdk server over the same [host.Directory] as
// the code lane, and every call goes through the directory's host, so the
// policy, pins and quarantine, approvals, masking, audit, sign-in and
// limits apply as they do to code.
package lane
