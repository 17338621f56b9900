package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/discovery/search/searcheval"
)

type config struct {
	binary, corpus, docs, command, name, commit string
	golden                                      []string
	limit                                       int
	copies                                      int // the corpus served this many times, copies' servers renamed
}

// half is one golden file and what the search made of it.
type half struct {
	name    string // the file's name without .jsonl: dev, test
	path    string
	sha256  string // of the file, hex
	queries []searcheval.Query
	// By the codebridge that started every server: what the search ranked
	// (query id -> "server:tool" keys, best first) and each search's time
	// as the code measured it, in query order. Empty with copies.
	ranks map[string][]string
	took  []time.Duration
	// By a new codebridge over the same state folder, no server running:
	// every search answered from the saved tool lists.
	savedRanks map[string][]string
	savedTook  []time.Duration
}

// batch is how many queries one run_python call searches: its printed
// results stay well under the default output limit (64k).
const batch = 40

// listBatch is how many servers the code lists at once with copies; the
// servers stop after copiesIdle, so at most about two batches run at once
// (the stand-ins take some 12 MB each).
const (
	listBatch  = 70
	copiesIdle = 3 * time.Second
)

func runBench(ctx context.Context, cfg config) error {
	start := time.Now()
	corpus, err := searcheval.LoadCorpus(cfg.corpus)
	if err != nil {
		return err
	}
	if cfg.copies < 1 {
		return fmt.Errorf("-copies %d: want 1 or more", cfg.copies)
	}
	if cfg.copies > 1 && cfg.docs != "" {
		return fmt.Errorf("-copies %d measures latency only (every tool is there %d times, so the rankings score nothing): leave out -docs", cfg.copies, cfg.copies)
	}
	var halves []*half
	for _, path := range cfg.golden {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "searchbench: no golden file %s, skipped\n", path)
			continue
		}
		qs, err := searcheval.LoadGolden(path, corpus)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		halves = append(halves, &half{name: strings.TrimSuffix(filepath.Base(path), ".jsonl"), path: path,
			sha256: fmt.Sprintf("%x", sha256.Sum256(data)), queries: qs, ranks: map[string][]string{}, savedRanks: map[string][]string{}})
	}
	if len(halves) == 0 {
		return fmt.Errorf("none of the golden files %v exists: pass -golden scripts/searchbench/testdata/golden.jsonl to try the harness", cfg.golden)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	corpusPath, err := filepath.Abs(cfg.corpus)
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "codebridge-searchbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	want, err := writeConfig(filepath.Join(root, "config"), self, corpusPath, corpus, cfg.copies)
	if err != nil {
		return err
	}
	tools := len(corpus) * cfg.copies

	// The first codebridge starts every server (which saves its tool list)
	// and, without copies, runs the searches that are scored.
	var env []string
	if cfg.copies > 1 {
		env = append(env, settings.EnvPrefix+"SERVER_IDLE_TIMEOUT="+strconv.Itoa(int(copiesIdle.Seconds())))
	}
	cs, stderr, err := startCodebridge(ctx, cfg.binary, root, env...)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "searchbench: %d tools of %d servers behind codebridge; checking that every tool is listed\n", tools, len(want))
	st, err := checkListed(ctx, cs, corpus, want, cfg.copies > 1)
	if err == nil && cfg.copies == 1 {
		for _, h := range halves {
			fmt.Fprintf(os.Stderr, "searchbench: %d queries of %s through search_tool_docs, every server running\n", len(h.queries), h.path)
			if err = searchAll(ctx, cs, h.queries, cfg.limit, h.ranks, &h.took); err != nil {
				err = fmt.Errorf("%s: %w", h.path, err)
				break
			}
		}
	}
	cs.Close()
	if err != nil {
		return fmt.Errorf("%w\ncodebridge's stderr:\n%s", err, stderr)
	}

	// A second codebridge over the same state folder has no server running:
	// search_tool_docs answers from the saved lists.
	cs, stderr, err = startCodebridge(ctx, cfg.binary, root)
	if err != nil {
		return err
	}
	defer cs.Close()
	if st.firstSaved, err = firstSearch(ctx, cs); err != nil {
		return fmt.Errorf("%w\ncodebridge's stderr:\n%s", err, stderr)
	}
	for _, h := range halves {
		fmt.Fprintf(os.Stderr, "searchbench: %d queries of %s through search_tool_docs, from the saved tool lists\n", len(h.queries), h.path)
		if err := searchAll(ctx, cs, h.queries, cfg.limit, h.savedRanks, &h.savedTook); err != nil {
			return fmt.Errorf("%s: %w\ncodebridge's stderr:\n%s", h.path, err, stderr)
		}
	}
	rep := report{cfg: cfg, date: start.UTC(), halves: halves, tools: tools, servers: len(want), start: st,
		machine: machine(), elapsed: time.Since(start)}
	if rep.cfg.commit == "" {
		rep.cfg.commit = gitDescribe()
	}
	fmt.Print(rep.text())
	return rep.write(cfg.docs)
}

// writeConfig writes codebridge's config folder: one NAME.json per server of
// the corpus, whose command is this program's serve form for that server;
// with copies > 1, the k-th copy's servers are named NAME-k (k from 2) and
// serve NAME's tools. It returns every configured server's tool names.
func writeConfig(dir, self, corpusPath string, corpus []searcheval.Tool, copies int) (map[string][]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var names []string
	tools := map[string][]string{}
	for _, t := range corpus {
		if tools[t.Server] == nil {
			names = append(names, t.Server)
		}
		tools[t.Server] = append(tools[t.Server], t.Tool)
	}
	want := map[string][]string{}
	for c := 1; c <= copies; c++ {
		for _, server := range names {
			name := server
			if c > 1 {
				name = fmt.Sprintf("%s-%d", server, c)
			}
			if strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
				return nil, fmt.Errorf("corpus server %q cannot name a config file: rename it in the corpus", name)
			}
			if want[name] != nil {
				return nil, fmt.Errorf("server %q twice: the corpus has a server named as another's copy; use -copies 1", name)
			}
			want[name] = tools[server]
			def := map[string]any{"command": self, "args": []string{"serve", "-corpus", corpusPath, "-server", server}}
			b, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{name: def}}, "", "  ")
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o600); err != nil {
				return nil, err
			}
		}
	}
	return want, nil
}

// lockedBuffer is codebridge's stderr, written by the exec package's copier
// while the benchmark may read it.
type lockedBuffer struct {
	mu  sync.Mutex // protects following
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startCodebridge starts the binary over stdio with root's config folder and
// a state folder and settings file of its own, so nothing of the user's
// (servers, saved tool lists, pins, settings) is used.
func startCodebridge(ctx context.Context, binary, root string, env ...string) (*mcp.ClientSession, *lockedBuffer, error) {
	stateDir := filepath.Join(root, "state")
	settingsFile := filepath.Join(root, "settings.toml")
	for _, err := range []error{os.MkdirAll(stateDir, 0o700), os.WriteFile(settingsFile, nil, 0o600)} {
		if err != nil {
			return nil, nil, err
		}
	}
	cmd := exec.Command(binary)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, settings.EnvPrefix) && !strings.HasPrefix(kv, settings.EnvPrefix+"IMAGE=") &&
			!strings.HasPrefix(kv, settings.EnvPrefix+"ENGINE=")
	})
	cmd.Env = append(cmd.Env, settings.FileEnv+"="+settingsFile, settings.EnvPrefix+"CONFIG_DIR="+filepath.Join(root, "config"),
		settings.EnvPrefix+"STATE_DIR="+stateDir, settings.EnvPrefix+"TIMEOUT=120",
		// The listing of -copies 10 prints some 100 KB.
		settings.EnvPrefix+"OUTPUT_LIMIT=4m")
	cmd.Env = append(cmd.Env, env...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "searchbench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w\n%s", binary, err, stderr)
	}
	return cs, stderr, nil
}

// started is what getting the servers going cost, as the code timed it.
type started struct {
	listed      time.Duration // every server listed (and so started)
	firstSearch time.Duration // the first search after that, not scored
	firstSaved  time.Duration // the first search of the second codebridge, from the saved lists
}

// checkListed has the code list every server's tools (which starts each
// server and saves its list) and checks that codebridge shows exactly the
// tools of want, that a call reaches a stand-in server, and runs a first
// search; the rankings are only trusted after this. With pause, the servers
// are listed listBatch at a time, waiting for the last batch to stop
// (copiesIdle) before the next.
func checkListed(ctx context.Context, cs *mcp.ClientSession, corpus []searcheval.Tool, want map[string][]string, pause bool) (started, error) {
	// A tool without required arguments, so the sandbox's own check lets
	// the call through.
	callServer, callTool := "", ""
	for _, t := range corpus {
		var s struct {
			Required []string `json:"required"`
		}
		if json.Unmarshal(t.InputSchema, &s) == nil && len(s.Required) == 0 {
			callServer, callTool = t.Server, t.Tool
			break
		}
	}
	wait := 0.0
	if pause {
		wait = (copiesIdle + 2*time.Second).Seconds()
	}
	code := fmt.Sprintf(`import asyncio, json, time
t0 = time.perf_counter_ns()
names = discovered_servers()
listed = {}
for i in range(0, len(names), %d):
    part = names[i:i + %d]
    for n, l in zip(part, await asyncio.gather(*(list_tools(n) for n in part))):
        listed[n] = [t["name"] for t in l]
    if %g and i + %d < len(names):
        await asyncio.sleep(%g)
took = time.perf_counter_ns() - t0
called = await call_tool(%s, %s, {})
t0 = time.perf_counter_ns()
await search_tool_docs("find a tool", limit=10)
first = time.perf_counter_ns() - t0
print(%q + json.dumps({"servers": listed, "called": called, "listed": took, "first": first}))
`, listBatch, listBatch, wait, listBatch, wait, mustJSON(callServer), mustJSON(callTool), marker)
	var got struct {
		Servers map[string][]string `json:"servers"`
		Called  string              `json:"called"`
		Listed  int64               `json:"listed"`
		First   int64               `json:"first"`
	}
	if err := runPython(ctx, cs, code, &got); err != nil {
		return started{}, fmt.Errorf("listing every server's tools from code: %w", err)
	}
	var problems []string
	for _, s := range slices.Sorted(maps.Keys(want)) {
		w, g := slices.Sorted(slices.Values(want[s])), slices.Sorted(slices.Values(got.Servers[s]))
		if !slices.Equal(w, g) {
			problems = append(problems, fmt.Sprintf("server %q: codebridge lists %d tools %v, the corpus has %d %v", s, len(g), g, len(w), w))
		}
	}
	for s := range got.Servers {
		if want[s] == nil {
			problems = append(problems, fmt.Sprintf("codebridge lists a server %q the corpus does not have", s))
		}
	}
	if got.Called != "called "+callTool {
		problems = append(problems, fmt.Sprintf("calling %s:%s answered %q, want %q", callServer, callTool, got.Called, "called "+callTool))
	}
	if len(problems) > 0 {
		return started{}, errors.New(strings.Join(problems, "\n"))
	}
	return started{listed: time.Duration(got.Listed), firstSearch: time.Duration(got.First)}, nil
}

// firstSearch runs one search, not scored, and returns its time as the code
// measured it.
func firstSearch(ctx context.Context, cs *mcp.ClientSession) (time.Duration, error) {
	code := fmt.Sprintf(`import json, time
t0 = time.perf_counter_ns()
await search_tool_docs("find a tool", limit=10)
print(%q + json.dumps(time.perf_counter_ns() - t0))
`, marker)
	var took int64
	if err := runPython(ctx, cs, code, &took); err != nil {
		return 0, fmt.Errorf("a first search: %w", err)
	}
	return time.Duration(took), nil
}

// marker starts the line the code prints its JSON on, so that nothing else
// the run prints (a server's note on stderr, say) is taken for it.
const marker = "SEARCHBENCH "

// searchAll runs queries through search_tool_docs, batch by batch in one
// session, and keeps each ranking in ranks (by query id) and how long its
// search took in took (in query order).
func searchAll(ctx context.Context, cs *mcp.ClientSession, queries []searcheval.Query, limit int, ranks map[string][]string, took *[]time.Duration) error {
	for from := 0; from < len(queries); from += batch {
		qs := queries[from:min(from+batch, len(queries))]
		var texts []string
		for _, q := range qs {
			texts = append(texts, q.Query)
		}
		// A JSON array of strings is also a Python literal.
		code := fmt.Sprintf(`import json, time
out = []
for q in %s:
    t0 = time.perf_counter_ns()
    hits = await search_tool_docs(q, limit=%d)
    took = time.perf_counter_ns() - t0
    out.append({"took": took, "keys": [h["server"] + ":" + h["tool"] for h in hits]})
print(%q + json.dumps(out))
`, mustJSON(texts), limit, marker)
		var got []struct {
			Took int64    `json:"took"`
			Keys []string `json:"keys"`
		}
		if err := runPython(ctx, cs, code, &got); err != nil {
			return err
		}
		if len(got) != len(qs) {
			return fmt.Errorf("the code answered %d searches for %d queries", len(got), len(qs))
		}
		for i, q := range qs {
			ranks[q.ID] = got[i].Keys
			*took = append(*took, time.Duration(got[i].Took))
		}
	}
	return nil
}

// runPython runs code and decodes the JSON it printed after [marker] into
// v. A failed run, or a search that could not reach a server (the helper
// says so on stderr), is an error with the run's text.
func runPython(ctx context.Context, cs *mcp.ClientSession, code string, v any) error {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
	if err != nil {
		return fmt.Errorf("run_python: %w", err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	out := text.String()
	if res.IsError || strings.Contains(out, "could not be searched") {
		return fmt.Errorf("run_python failed:\n%s", out)
	}
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(line, marker); ok {
			return json.Unmarshal([]byte(rest), v)
		}
	}
	return fmt.Errorf("run_python printed no line starting %q:\n%s", marker, out)
}
