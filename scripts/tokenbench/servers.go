package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// downstream is one real MCP server the benchmark configures, installed from the
// pinned npm trees of scripts/npm.
type downstream struct {
	name string
	tree string // the npm tree under scripts/npm: servers or bench
	bin  string // its executable in node_modules/.bin
	args func(w *workspace) []string
	env  func(w *workspace) map[string]string
}

// servers are configured in both ways, in this order. github and notion are
// given dummy tokens: they list their tools offline, and no task calls them
// (they cannot reach their service from here); they stand for the large
// servers an agent typically has configured beside the ones a task uses.
var servers = []downstream{
	{name: "filesystem", tree: "servers", bin: "mcp-server-filesystem",
		args: func(w *workspace) []string { return []string{w.files} }},
	{name: "memory", tree: "servers", bin: "mcp-server-memory",
		env: func(w *workspace) map[string]string {
			return map[string]string{"MEMORY_FILE_PATH": filepath.Join(w.root, "memory.jsonl")}
		}},
	{name: "everything", tree: "servers", bin: "mcp-server-everything"},
	{name: "github", tree: "bench", bin: "mcp-server-github",
		env: func(*workspace) map[string]string {
			return map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy-token-for-listing"}
		}},
	{name: "notion", tree: "bench", bin: "notion-mcp-server",
		env: func(*workspace) map[string]string {
			return map[string]string{"NOTION_TOKEN": "dummy-token-for-listing"}
		}},
	{name: "playwright", tree: "bench", bin: "playwright-mcp",
		args: func(*workspace) []string { return []string{"--headless", "--isolated"} }},
}

func (s downstream) command(npm string, w *workspace) (string, []string, map[string]string) {
	var args []string
	if s.args != nil {
		args = s.args(w)
	}
	env := map[string]string{}
	if s.env != nil {
		env = s.env(w)
	}
	return filepath.Join(npm, s.tree, "node_modules", ".bin", s.bin), args, env
}

// writeConfig writes the servers as codebridge's config folder (one file,
// the mcpServers format).
func writeConfig(dir, npm string, w *workspace) error {
	all := map[string]any{}
	for _, s := range servers {
		bin, args, env := s.command(npm, w)
		def := map[string]any{"command": bin}
		if len(args) > 0 {
			def["args"] = args
		}
		if len(env) > 0 {
			def["env"] = env
		}
		all[s.name] = def
	}
	b, err := json.MarshalIndent(map[string]any{"mcpServers": all}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bench.json"), b, 0o600)
}

// native holds go-sdk client sessions to every server, started the way an
// agent that calls them directly would start them.
type native struct {
	sessions map[string]*mcp.ClientSession
	tools    map[string][]byte // server -> its tools/list result's tools, as JSON
	counts   map[string]int
}

// connectNative starts every server and lists its tools.
func connectNative(ctx context.Context, npm string, w *workspace) (*native, error) {
	n := &native{sessions: map[string]*mcp.ClientSession{}, tools: map[string][]byte{}, counts: map[string]int{}}
	for _, s := range servers {
		bin, args, env := s.command(npm, w)
		cmd := exec.Command(bin, args...)
		cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(env)) {
			cmd.Env = append(cmd.Env, k+"="+env[k])
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "tokenbench-direct", Version: "1"}, nil)
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			n.close()
			return nil, fmt.Errorf("starting %s (%s): %w", s.name, bin, err)
		}
		n.sessions[s.name] = cs
		res, err := cs.ListTools(cctx, nil)
		cancel()
		if err != nil {
			n.close()
			return nil, fmt.Errorf("listing the tools of %s: %w", s.name, err)
		}
		raw, err := json.Marshal(res.Tools)
		if err != nil {
			n.close()
			return nil, err
		}
		n.tools[s.name] = raw
		n.counts[s.name] = len(res.Tools)
	}
	return n, nil
}

func (n *native) close() {
	for _, cs := range n.sessions {
		cs.Close()
	}
}

// call calls a tool directly and returns the result as a model reads it:
// the text of its content blocks (a tool error included, as the model sees it).
func (n *native) call(ctx context.Context, server, tool string, args map[string]any) (string, bool, error) {
	cs, ok := n.sessions[server]
	if !ok {
		return "", false, fmt.Errorf("no server %q", server)
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", false, fmt.Errorf("calling %s.%s: %w", server, tool, err)
	}
	return contentText(res.Content), res.IsError, nil
}

// contentText is the text of a result's content blocks, one after another.
func contentText(content []mcp.Content) string {
	var b strings.Builder
	for _, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
