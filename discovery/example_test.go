package discovery_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codebridge-mcp/codebridge/discovery"
)

func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "MCPs")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "claude.json"), []byte(`{"mcpServers": {
  "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
  "github.com": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
}}`), 0o644)
	opts := discovery.Options{LookupEnv: func(k string) (string, bool) { return "t0k3n", k == "TOKEN" }}

	cfg := discovery.Load(dir, nil, opts)
	for _, s := range cfg.Servers {
		fmt.Println(s.Name, s.Transport, s.Command, s.Args, s.URL, s.Headers)
	}

	// A half-saved file: the servers it defined stay, with a problem.
	os.WriteFile(filepath.Join(dir, "claude.json"), []byte(`{"mcpServers": {`), 0o644)
	next := discovery.Load(dir, cfg, opts)
	added, removed, changed := discovery.Diff(cfg, next)
	fmt.Println(next.Names(), added, removed, changed)
	fmt.Println(strings.TrimPrefix(next.Problems[0].String(), dir+string(filepath.Separator)))
	// Output:
	// github.com streamable-http  [] https://api.example.com/mcp map[Authorization:Bearer t0k3n]
	// memory stdio npx [-y @modelcontextprotocol/server-memory]  map[]
	// [github.com memory] [] [] []
	// claude.json:1:16: invalid JSON: unexpected end of JSON input: fix the file (no comments or trailing commas allowed); keeping the servers it defined before (github.com, memory) until this is fixed
}

func ExampleAliases() {
	names := []string{"get-sum", "get.sum", "get_sum", "class", "2fa"}
	aliases := discovery.Aliases(names)
	for _, n := range names {
		fmt.Printf("%s -> %s\n", n, aliases[n])
	}
	// Output:
	// get-sum -> get_sum_2
	// get.sum -> get_sum_3
	// get_sum -> get_sum
	// class -> class_
	// 2fa -> _2fa
}
