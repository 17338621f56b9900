package lane

import (
	"net/http"
	"strings"
)

// Select is the lane an HTTP request is served: the tools lane when its
// URL's query says codemode=false or codemode=off (what clients with a
// code mode of their own append: opencode, MCP portals), else def.
func Select(r *http.Request, def string) string {
	switch strings.ToLower(r.URL.Query().Get("codemode")) {
	case "false", "off":
		return "tools"
	}
	return def
}
