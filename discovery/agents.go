package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// An AgentFile is a file where an agent keeps MCP server definitions.
type AgentFile struct {
	Agent string // short name, also the ~/MCPs file it imports into: claude-desktop, cursor, ...
	Label string // the agent's name for people: Claude Desktop, Cursor, ...
	Path  string
	// Project says the file is the current project's (./.mcp.json, ...),
	// which whoever wrote the project chose, not the user: see
	// [PlanImport]. The user's own files in their home are not.
	Project bool
}

// AgentPlaces are the directories agent config files are found relative to.
type AgentPlaces struct {
	Home string // the user's home
	Cwd  string // the current project
	GOOS string // "darwin" puts application data under ~/Library/Application Support
}

// AgentFiles lists the files agents keep MCP servers in, on Linux and
// macOS, in the order an import prefers them: user-wide files first, then
// the current project's.
func AgentFiles(p AgentPlaces) []AgentFile {
	appData := filepath.Join(p.Home, ".config") // Linux: $XDG_CONFIG_HOME's default
	if p.GOOS == "darwin" {
		appData = filepath.Join(p.Home, "Library", "Application Support")
	}
	files := []AgentFile{
		{"claude-desktop", "Claude Desktop", filepath.Join(appData, "Claude", "claude_desktop_config.json"), false},
		{"claude-code", "Claude Code", filepath.Join(p.Home, ".claude.json"), false},
		{"cursor", "Cursor", filepath.Join(p.Home, ".cursor", "mcp.json"), false},
		{"vscode", "VS Code", filepath.Join(appData, "Code", "User", "mcp.json"), false},
		{"vscode", "VS Code", filepath.Join(appData, "Code", "User", "settings.json"), false},
		{"windsurf", "Windsurf", filepath.Join(p.Home, ".codeium", "windsurf", "mcp_config.json"), false},
		{"gemini", "Gemini CLI", filepath.Join(p.Home, ".gemini", "settings.json"), false},
		{"codex", "Codex", filepath.Join(p.Home, ".codex", "config.toml"), false},
	}
	if p.Cwd != "" && p.Cwd != p.Home {
		files = append(files,
			AgentFile{"claude-code", "Claude Code", filepath.Join(p.Cwd, ".mcp.json"), true},
			AgentFile{"cursor", "Cursor", filepath.Join(p.Cwd, ".cursor", "mcp.json"), true},
			AgentFile{"vscode", "VS Code", filepath.Join(p.Cwd, ".vscode", "mcp.json"), true},
			AgentFile{"gemini", "Gemini CLI", filepath.Join(p.Cwd, ".gemini", "settings.json"), true},
		)
	}
	return files
}

// An AgentServer is one server definition found in an agent's file, in
// codebridge's format (the keys of an ~/MCPs entry).
type AgentServer struct {
	File  AgentFile
	Name  string
	Entry map[string]any
	// Note says what the import changed or could not carry over, if
	// anything (e.g. a VS Code ${input:...} it left disabled).
	Note string
}

// ReadAgentFile reads the servers an agent file defines. A file that does
// not exist has none; one that cannot be parsed is an error saying where.
func ReadAgentFile(f AgentFile, cwd string) ([]AgentServer, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sections []map[string]any
	if f.Agent == "codex" {
		servers, err := codexServers(data)
		if err != nil {
			return nil, err
		}
		sections = append(sections, servers)
	} else {
		var doc map[string]any
		if err := json.Unmarshal(stripJSONC(data), &doc); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				line, col := lineCol(data, int(syn.Offset)-1)
				return nil, fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, syn)
			}
			return nil, fmt.Errorf("not a JSON object: %v", err)
		}
		sections = jsonSections(f, doc, cwd)
	}
	var out []AgentServer
	seen := map[string]bool{}
	for _, sec := range sections {
		for _, name := range sortedKeys(sec) {
			raw, ok := sec[name].(map[string]any)
			if !ok || seen[name] {
				continue
			}
			seen[name] = true
			entry, note := normalize(f.Agent, raw)
			if needsLogin(entry) {
				note = joinNotes(note, "a remote server without headers signs in with OAuth, if at all: run codebridge login "+name+" once it is imported")
			}
			out = append(out, AgentServer{File: f, Name: name, Entry: entry, Note: note})
		}
	}
	return out, nil
}

// jsonSections finds the server maps of a JSON agent file.
func jsonSections(f AgentFile, doc map[string]any, cwd string) []map[string]any {
	obj := func(m map[string]any, key string) map[string]any {
		v, _ := m[key].(map[string]any)
		return v
	}
	var out []map[string]any
	add := func(m map[string]any) {
		if m != nil {
			out = append(out, m)
		}
	}
	add(obj(doc, "mcpServers"))
	switch f.Agent {
	case "vscode":
		add(obj(doc, "servers"))                              // mcp.json
		add(obj(obj(doc, "mcp"), "servers"))                  // settings.json, "mcp": {"servers": ...}
		if m, ok := doc["mcp.servers"].(map[string]any); ok { // settings.json, dotted key
			add(m)
		}
	case "claude-code":
		// ~/.claude.json keeps each project's own servers under its path.
		if proj := obj(obj(doc, "projects"), cwd); proj != nil {
			add(obj(proj, "mcpServers"))
		}
	}
	return out
}

// normalize turns an agent's server entry into codebridge's: the keys
// codebridge reads, under the names it reads them.
func normalize(agent string, raw map[string]any) (map[string]any, string) {
	entry := map[string]any{}
	var notes []string
	for _, k := range []string{"command", "args", "env", "cwd", "url", "headers", "type", "disabled", "description"} {
		if v, ok := raw[k]; ok {
			entry[k] = v
		}
	}
	switch agent {
	case "windsurf":
		if u, ok := raw["serverUrl"]; ok {
			entry["url"] = u
		}
	case "gemini":
		// Gemini CLI: httpUrl is streamable HTTP, url is SSE; includeTools
		// and excludeTools are a tool policy.
		if u, ok := raw["httpUrl"]; ok {
			entry["url"], entry["type"] = u, "http"
		} else if _, ok := raw["url"]; ok {
			entry["type"] = "sse"
		}
		policy := map[string]any{}
		if v, ok := raw["includeTools"]; ok {
			policy["allow"] = v
		}
		if v, ok := raw["excludeTools"]; ok {
			policy["deny"] = v
		}
		if len(policy) > 0 {
			entry["tools"] = policy
		}
	case "vscode":
		if _, ok := raw["envFile"]; ok {
			notes = append(notes, `"envFile" is not supported: copy its variables into "env"`)
		}
	}
	if o := oauthEntry(raw["oauth"]); o != nil {
		entry["oauth"] = o
	}
	if t, ok := entry["type"].(string); ok && t == "stdio" {
		delete(entry, "type") // codebridge's default when there is a command
	}
	if containsInput(entry) {
		entry["disabled"] = true
		notes = append(notes, "uses ${input:...}, a value VS Code asks for: put the value or an ${ENV_VAR} in its place, then remove \"disabled\"")
	}
	return entry, strings.Join(notes, "; ")
}

// oauthEntry keeps the client an agent's entry signs in with (Gemini CLI's
// and Claude Code's "oauth" objects: clientId, clientSecret, scopes), leaving
// out what codebridge finds itself (endpoints, redirect URI, callback port).
// It returns nil when there is none.
func oauthEntry(v any) map[string]any {
	raw, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]any{}
	for _, k := range []string{"clientId", "clientSecret", "scopes"} {
		if v, ok := raw[k]; ok {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// needsLogin reports whether a normalized entry is a streamable HTTP server
// that sends no headers: such a server, if it asks for credentials at all,
// asks for an OAuth sign-in, which codebridge login gives.
func needsLogin(entry map[string]any) bool {
	_, hasURL := entry["url"]
	_, hasHeaders := entry["headers"]
	typ, _ := entry["type"].(string)
	return hasURL && !hasHeaders && !strings.EqualFold(typ, "sse")
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// containsInput reports whether a VS Code ${input:...} appears in v.
func containsInput(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, "${input:")
	case []any:
		for _, x := range v {
			if containsInput(x) {
				return true
			}
		}
	case map[string]any:
		for _, x := range v {
			if containsInput(x) {
				return true
			}
		}
	}
	return false
}

// stripJSONC turns JSON with comments and trailing commas (VS Code's and
// Claude Code's files allow them) into JSON, keeping every byte offset of
// what remains, so error positions stay right.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	inString, escaped := false, false
	lastComma := -1 // offset of a comma that may turn out to be trailing
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
			lastComma = -1
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			for i += 2; i < len(out) && !(out[i] == '*' && i+1 < len(out) && out[i+1] == '/'); i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			if i+1 < len(out) {
				out[i], out[i+1] = ' ', ' '
				i++
			}
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	return out
}

// codexServers reads the [mcp_servers.NAME] tables of Codex's config.toml.
// Codex's url means streamable HTTP; http_headers are headers;
// bearer_token_env_var becomes an Authorization header read from that
// variable; enabled = false disables.
func codexServers(data []byte) (map[string]any, error) {
	var doc struct {
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, fmt.Errorf("line %d: %s", perr.Position.Line, perr.Message)
		}
		return nil, fmt.Errorf("[mcp_servers]: %v", err)
	}
	servers := make(map[string]any, len(doc.MCPServers))
	for name, srv := range doc.MCPServers {
		if srv == nil {
			srv = map[string]any{}
		}
		servers[name] = srv
		if u, ok := srv["url"]; ok {
			srv["url"], srv["type"] = u, "http"
		}
		headers, _ := srv["http_headers"].(map[string]any)
		if name, ok := srv["bearer_token_env_var"].(string); ok {
			if headers == nil {
				headers = map[string]any{}
			}
			headers["Authorization"] = "Bearer ${" + name + "}"
		}
		if headers != nil {
			srv["headers"] = headers
		}
		if enabled, ok := srv["enabled"].(bool); ok && !enabled {
			srv["disabled"] = true
		}
	}
	return servers, nil
}
