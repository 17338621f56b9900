package oauth

import (
	"fmt"
	"strings"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// Signs reports whether codebridge may sign in to def: a streamable HTTP
// server that sends no Authorization header of its own.
func Signs(def *discovery.Server) bool {
	if def.Transport != discovery.Streamable {
		return false
	}
	for k := range def.Headers {
		if strings.EqualFold(k, "Authorization") {
			return false
		}
	}
	return true
}

// State says in a few words whether codebridge is signed in to def, as of
// now: who, with which authorization server, until when. It is empty for a
// server codebridge does not sign in to (see [Signs]).
func (s *Store) State(def *discovery.Server, now time.Time) string {
	if !Signs(def) {
		return ""
	}
	rec, err := s.Load(def.Name, def.URL)
	switch {
	case err != nil:
		return "unknown: " + err.Error()
	case !rec.SignedInNow():
		return "not signed in (if it asks for a sign-in: codebridge login " + def.Name + ")"
	}
	return rec.Describe(now)
}

// Describe says who r signed in as, where, and until when.
func (r *Record) Describe(now time.Time) string {
	var b strings.Builder
	b.WriteString("signed in")
	if r.Subject != "" {
		fmt.Fprintf(&b, " as %s", r.Subject)
	}
	fmt.Fprintf(&b, " at %s", r.Issuer)
	refreshes := r.RefreshToken.Reveal() != ""
	switch {
	case r.Expiry.IsZero():
		b.WriteString(", with no expiry")
	case r.Expiry.After(now):
		fmt.Fprintf(&b, ", until %s", r.Expiry.Local().Format("2006-01-02 15:04 MST"))
		if refreshes {
			b.WriteString(", then refreshed without you")
		}
	case refreshes:
		fmt.Fprintf(&b, "; expired %s, refreshed on its next use", r.Expiry.Local().Format("2006-01-02 15:04 MST"))
	default:
		fmt.Fprintf(&b, "; expired %s: codebridge login %s", r.Expiry.Local().Format("2006-01-02 15:04 MST"), r.Server)
	}
	return b.String()
}
