package server

import (
	"crypto/rand"
	"os"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Sandbox sessions by handle. Every sandbox session has a handle
// (structuredContent.session.handle); a run_python call that passes it as
// "session" continues that session from any MCP session and transport, if
// the caller is the principal that created it (runtime/sandbox checks).
// Without one, an MCP session's calls share the sandbox session of their
// own, as before; a sessionless call (HTTP without an MCP session, MCP
// 2026-07-28) starts a session reachable by its handle only.

// metaRequireSession is the _meta key with which a call asks to continue
// the session of its handle only: an unknown handle is then an error
// instead of a new session.
const metaRequireSession = "codebridge/requireSession"

// failUnknownSession is the failure kind of a call whose handle names no
// session, when the call asked not to start a new one.
const failUnknownSession protocol.FailureKind = "unknown_session"

// unknownHandle starts the messages about a handle that names no session.
const unknownHandle = `the "session" handle names no session of yours: it ended (closed, idle or evicted), or was never yours`

// requireSession reports whether req asked to continue the session of its
// handle only ([metaRequireSession]).
func requireSession(req *mcp.CallToolRequest) bool {
	v, _ := req.Params.GetMeta()[metaRequireSession].(bool)
	return v
}

// sessionless reports whether req came over HTTP without an MCP session (a
// client of MCP 2026-07-28 or later, which bridge/front serves statelessly):
// its MCP session lasts this request only, so its state lives under a handle.
func sessionless(req *mcp.CallToolRequest) bool {
	return req.Session != nil && req.Session.ID() == "" && req.Extra != nil && req.Extra.Header != nil
}

// principal names who sent req, to bind handles and suspended runs to: over
// HTTP, the identity bridge/front gave the bearer token (a hash of it, in
// the request's TokenInfo), or one anonymous caller when no token is
// required; over stdio, the local user running codebridge.
func principal(req *mcp.CallToolRequest) string { return principalOf(req.Extra) }

// principalOf is [principal] of a request with extra.
func principalOf(extra *mcp.RequestExtra) string {
	switch {
	case extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "":
		return "http-token:" + extra.TokenInfo.UserID
	case extra != nil && extra.Header != nil:
		return "http-anonymous"
	}
	return localUser
}

// localUser is the principal of stdio calls.
var localUser = "local-uid:" + strconv.Itoa(os.Getuid())

// detachedKey is the key of a new sandbox session reachable by its handle only.
func detachedKey() string { return "handle-" + rand.Text() }

// Evict closes the MCP session ss to make room for another (bridge/front,
// at MCP_BRIDGE_MAX_MCP_SESSIONS): its sandbox session is not ended but left
// to its handle, bounded like every other by idle expiry and eviction.
func (s *Server) Evict(ss *mcp.ServerSession) {
	s.mu.Lock()
	if sess, ok := s.sessions[ss]; ok {
		sess.evicted = true
		s.sessions[ss] = sess
	}
	s.mu.Unlock()
	ss.Close()
}

// Busy reports whether ss has run_python calls in progress or waiting,
// including runs waiting for their client's answers.
func (s *Server) Busy(ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued[ss] > 0
}
