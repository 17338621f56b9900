// Package oauth signs codebridge in to downstream MCP servers that require
// OAuth, following the MCP authorization spec as a client with go-sdk's auth
// and oauthex packages: [Login] runs the authorization code flow with PKCE in
// the user's browser, through a loopback redirect URI (RFC 8252); a [Store]
// keeps each server's sign-in in the OS keyring, else in a 0600 file under
// the state directory; and [Store.Handler] is the auth.OAuthHandler the pool's
// HTTP transports use at run time, which sends and refreshes the stored tokens
// and fails with an [AuthRequiredError] naming `codebridge login NAME` when the
// user must sign in.
package oauth
