package lane

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxName is the longest name a lane gives a tool or prompt: the limit of
// the clients that are strictest about tool names (64 characters of
// [a-zA-Z0-9_-]).
const MaxName = 64

// Separator joins a server's name and its tool's in [Name].
const Separator = "__"

// Name is the name the tools lane serves server's tool (or prompt) under.
// It depends on the two names only, so it is the same across reloads and
// restarts. When server is made of letters, digits, '-' and single '_'
// between them, tool of letters, digits, '-' and '_', and the two fit in
// MaxName with the separator, it is server__tool, from which both names
// read back unambiguously (the first "__" ends the server's name).
// Otherwise each character outside [a-zA-Z0-9_-] becomes '_', the two are
// cut to fit, and an '_' with 8 hex digits of the SHA-256 of the two names
// ends it, so different pairs keep different names.
func Name(server, tool string) string {
	if plainServer(server) && plainTool(tool) && len(server)+len(Separator)+len(tool) <= MaxName {
		return server + Separator + tool
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	s, t := clean(server), clean(tool)
	room := MaxName - len(Separator) - len(suffix)
	if len(s)+len(t) > room {
		// The server keeps at least half the room, or all it needs.
		s = s[:min(len(s), max(room/2, room-len(t)))]
		t = t[:min(len(t), room-len(s))]
	}
	return s + Separator + t + suffix
}

// PlainName is the name the tools lane serves server's tool (or prompt)
// under with plain names (lane_names plain): the tool's own, when it is
// made of letters, digits, '-' and '_' and fits in MaxName; else [Name]'s.
func PlainName(server, tool string) string {
	if plainTool(tool) && len(tool) <= MaxName {
		return tool
	}
	return Name(server, tool)
}

// plainServer reports whether a server's name goes into [Name] as it is.
func plainServer(s string) bool {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return false
	}
	return plainTool(s)
}

// plainTool reports whether a tool's name goes into [Name] as it is.
func plainTool(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// clean replaces each byte outside [a-zA-Z0-9_-] of s with '_'; "_" for
// an empty s.
func clean(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		if !nameByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}
