package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/server"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

type config struct {
	npm, binary, docs, command string
	replay                     *replayer // nil: no replay with a real model
}

// result is one task's figures, one JSON line.
type result struct {
	Task       string        `json:"task"`
	Kind       string        `json:"kind"`
	Direct     measure       `json:"direct"`
	DirectUsed measure       `json:"direct_used_servers_only"` // direct with only the servers the task uses configured
	Codebridge measure       `json:"codebridge"`
	Wall       time.Duration `json:"codebridge_wall_ns"` // run_python calls, through codebridge
	DirectWall time.Duration `json:"direct_wall_ns"`     // the same calls made directly (sequentially) by a go-sdk client
	ImageTok   int           `json:"codebridge_image_tokens,omitempty"`
	// The replay with a real model, when a key was given.
	ReplayDirect     *replayed `json:"replay_direct,omitempty"`
	ReplayCodebridge *replayed `json:"replay_codebridge,omitempty"`
}

// benchRoot makes the benchmark's folder, which also keeps a second
// tokenbench from running at once; remove it when done. A fixed folder,
// not a random one: its path is in the calls and results both ways, and a
// random name would change the token counts by a few from run to run.
func benchRoot() (string, error) {
	root := filepath.Join(os.TempDir(), "codebridge-tokenbench")
	if err := os.Mkdir(root, 0o700); err != nil {
		return "", fmt.Errorf("%w: another tokenbench is running, or one was killed; remove %s if none runs", err, root)
	}
	return root, nil
}

func runBench(ctx context.Context, cfg config) error {
	root, err := benchRoot()
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	// Both ways get the same data at paths of the same length.
	wd, err := newWorkspace(filepath.Join(root, "a"))
	if err != nil {
		return err
	}
	wc, err := newWorkspace(filepath.Join(root, "b"))
	if err != nil {
		return err
	}

	start := time.Now()
	fmt.Fprintln(os.Stderr, "tokenbench: starting the servers and doing each task by calling tools directly")
	n, err := connectNative(ctx, cfg.npm, wd)
	if err != nil {
		return err
	}
	direct, directWalls, replayDirect, err := runDirect(ctx, cfg, n, wd)
	n.close()
	if err != nil {
		return err
	}

	fmt.Fprintln(os.Stderr, "tokenbench: doing each task through codebridge's run_python")
	cb, walls, images, manual, replayCB, err := runCodebridge(ctx, cfg, root, wc)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "tokenbench: listing the tools of each lane")
	lanes, err := laneListings(ctx, cfg, filepath.Join(root, "lanes"), wc)
	if err != nil {
		return err
	}

	// One count of every text, both ways.
	texts := []string{manual}
	for _, s := range servers {
		texts = append(texts, string(n.tools[s.name]))
	}
	for i := range tasks {
		texts = append(texts, direct[i].texts()...)
		texts = append(texts, cb[i].texts()...)
	}
	counts, err := tokenizer{clients: filepath.Join(cfg.npm, "clients")}.count(texts)
	if err != nil {
		return err
	}
	manualTok := counts[0]
	counts = counts[1:]
	serverTok := map[string]tokens{}
	for _, s := range servers {
		serverTok[s.name], counts = counts[0], counts[1:]
	}
	var results []result
	for i, t := range tasks {
		r := result{Task: t.name, Kind: t.kind, Wall: walls[i], DirectWall: directWalls[i], ImageTok: images[i][1]}
		k := len(direct[i].texts())
		r.Direct, counts = direct[i].measureWith(counts[:k]), counts[k:]
		k = len(cb[i].texts())
		r.Codebridge, counts = cb[i].measureWith(counts[:k]), counts[k:]
		r.DirectUsed = withoutServers(r.Direct, t, serverTok)
		if cfg.replay != nil {
			r.ReplayDirect, r.ReplayCodebridge = replayDirect[i], replayCB[i]
		}
		results = append(results, r)
	}
	rep := report{results: results, counts: n.counts, serverTok: serverTok, manualTok: manualTok, date: time.Now().UTC(),
		command: cfg.command, elapsed: time.Since(start), listings: append([]listing{directListing(n, serverTok)}, lanes...)}
	fmt.Print(rep.text())
	return rep.write(cfg.docs)
}

// runDirect does every task by calling the tools directly through n, and
// returns the transcripts, the time spent in the calls, and the replays
// with a real model when cfg.replay is set.
func runDirect(ctx context.Context, cfg config, n *native, w *workspace) ([]transcript, []time.Duration, []*replayed, error) {
	// The floor: at least five real servers, 100 tools together.
	tools := 0
	for _, c := range n.counts {
		tools += c
	}
	if len(n.counts) < 5 || tools < 100 {
		return nil, nil, nil, fmt.Errorf("%d servers listed %d tools: the benchmark wants at least 5 servers and 100 tools", len(n.counts), tools)
	}
	trs := make([]transcript, len(tasks))
	walls := make([]time.Duration, len(tasks))
	for i, t := range tasks {
		d := &directRun{n: n, w: w}
		answer, err := t.direct(ctx, d)
		if err == nil {
			err = t.check(w, answer, false, true)
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("task %s, direct: %w", t.name, err)
		}
		trs[i] = directTranscript(n, t, d)
		walls[i] = d.wall
	}
	if cfg.replay == nil {
		return trs, walls, nil, nil
	}
	fmt.Fprintln(os.Stderr, "tokenbench: replaying each task with", cfg.replay.model, "calling tools directly")
	apiTools, err := directTools(n)
	if err != nil {
		return nil, nil, nil, err
	}
	replays, err := replayAll(ctx, cfg.replay, apiTools, w, directRunner(n))
	return trs, walls, replays, err
}

// directTranscript is what a direct agent's context carries for t: every
// configured server's tools as tools/list returned them, the prompt, and per
// turn the calls and their full results.
func directTranscript(n *native, t task, d *directRun) transcript {
	var tr transcript
	for _, s := range servers {
		tr.base = append(tr.base, string(n.tools[s.name]))
	}
	tr.base = append(tr.base, t.prompt)
	for _, turn := range d.turns {
		var calls []string
		for _, c := range turn.calls {
			calls = append(calls, mustJSON(c))
		}
		tr.writes = append(tr.writes, calls)
		tr.reads = append(tr.reads, turn.results)
	}
	return tr
}

// withoutServers is m as it would be with only the servers t uses
// configured: their tools' tokens and bytes are read once per turn fewer.
func withoutServers(m measure, t task, serverTok map[string]tokens) measure {
	for _, s := range servers {
		if slices.Contains(t.servers, s.name) {
			continue
		}
		tok := serverTok[s.name]
		for i := range tok {
			m.Context[i] -= tok[i]
			m.Input[i] -= tok[i] * m.Turns
		}
	}
	return m
}

// runCodebridge does every task through the codebridge binary over stdio,
// with the servers configured for workspace w, and returns the transcripts,
// the wall time of each task's run_python calls, the tokens of the images
// they returned, codebridge's manual (a resource a model may read once), and
// the replays with a real model when cfg.replay is set.
func runCodebridge(ctx context.Context, cfg config, root string, w *workspace) ([]transcript, []time.Duration, []tokens, string, []*replayed, error) {
	cs, stderr, err := startCodebridge(ctx, cfg, root, w)
	if err != nil {
		return nil, nil, nil, "", nil, err
	}
	defer cs.Close()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	listed, err := cs.ListTools(cctx, nil)
	if err != nil {
		return nil, nil, nil, "", nil, fmt.Errorf("listing codebridge's tools: %w", err)
	}
	tool := mustJSON(listed.Tools)
	res, err := cs.ReadResource(cctx, &mcp.ReadResourceParams{URI: server.ManualURI})
	if err != nil || len(res.Contents) == 0 {
		return nil, nil, nil, "", nil, fmt.Errorf("reading codebridge's manual %s: %v", server.ManualURI, err)
	}
	manual := res.Contents[0].Text
	// A first run starts the sandbox, as an agent's first call would; it is
	// not part of any task.
	// It also checks that every server's definition was taken.
	var want []string
	for _, s := range servers {
		want = append(want, "mcp_"+s.name)
	}
	slices.Sort(want)
	got, _, _, err := runPython(ctx, cs, map[string]any{"code": `print(sorted(n for n in globals() if n.startswith("mcp_") and n != "mcp_servers"))`})
	if err != nil || strings.TrimSpace(got) != "['"+strings.Join(want, "', '")+"']" {
		return nil, nil, nil, "", nil, fmt.Errorf("first run: got %q, want the proxies %v (%v)\n%s", got, want, err, stderr.String())
	}
	trs := make([]transcript, len(tasks))
	walls := make([]time.Duration, len(tasks))
	images := make([]tokens, len(tasks))
	for i, t := range tasks {
		tr := transcript{base: []string{tool, t.prompt}}
		var printed strings.Builder
		image := false
		for _, code := range t.runs {
			code = strings.ReplaceAll(code, "$ROOT", w.files)
			began := time.Now()
			text, img, imgTok, err := runPython(ctx, cs, map[string]any{"code": code})
			walls[i] += time.Since(began)
			if err != nil {
				return nil, nil, nil, "", nil, fmt.Errorf("task %s: %w\n%s", t.name, err, stderr.String())
			}
			image = image || img
			images[i] = images[i].add(tokens{imgTok, imgTok})
			tr.writes = append(tr.writes, []string{mustJSON(call{Name: "run_python", Args: map[string]any{"code": code}})})
			tr.reads = append(tr.reads, []string{text})
			printed.WriteString(text)
		}
		tr.extra = images[i]
		if err := t.check(w, printed.String(), image, false); err != nil {
			return nil, nil, nil, "", nil, fmt.Errorf("task %s through codebridge: %w", t.name, err)
		}
		trs[i] = tr
	}
	var replays []*replayed
	if cfg.replay != nil {
		fmt.Fprintln(os.Stderr, "tokenbench: replaying each task with", cfg.replay.model, "through codebridge")
		tools := []apiTool{{Name: listed.Tools[0].Name, Description: listed.Tools[0].Description, InputSchema: json.RawMessage(mustJSON(listed.Tools[0].InputSchema))}}
		replays, err = replayAll(ctx, cfg.replay, tools, w, func(ctx context.Context, name string, input map[string]any) (string, bool, error) {
			if name != "run_python" {
				return "", false, fmt.Errorf("no tool %q: the only tool is run_python", name)
			}
			text, _, _, err := runPython(ctx, cs, input)
			return text, false, err
		})
		if err != nil {
			return nil, nil, nil, "", nil, err
		}
	}
	return trs, walls, images, manual, replays, nil
}

// startCodebridge starts the codebridge binary over stdio with the servers
// configured for workspace w, its config and state folders under root,
// and the settings env adds (e.g. MCP_BRIDGE_LANE=tools); it returns the
// client's session and codebridge's stderr.
func startCodebridge(ctx context.Context, cfg config, root string, w *workspace, env ...string) (*mcp.ClientSession, *bytes.Buffer, error) {
	confDir := filepath.Join(root, "config")
	stateDir := filepath.Join(root, "state")
	settingsFile := filepath.Join(root, "settings.toml")
	for _, err := range []error{os.MkdirAll(confDir, 0o700), os.MkdirAll(stateDir, 0o700), os.WriteFile(settingsFile, nil, 0o600)} {
		if err != nil {
			return nil, nil, err
		}
	}
	if err := writeConfig(confDir, cfg.npm, w); err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(cfg.binary)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, settings.EnvPrefix) && !strings.HasPrefix(kv, settings.EnvPrefix+"IMAGE=")
	})
	// A run's time limit of 120 s, not 30: on a loaded machine the first
	// pandas and matplotlib run can take longer, and a timeout is not what
	// is measured.
	cmd.Env = append(cmd.Env, settings.FileEnv+"="+settingsFile, settings.EnvPrefix+"CONFIG_DIR="+confDir,
		settings.EnvPrefix+"STATE_DIR="+stateDir, settings.EnvPrefix+"TIMEOUT=120")
	cmd.Env = append(cmd.Env, env...)
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "tokenbench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w\n%s", cfg.binary, err, stderr.String())
	}
	return cs, stderr, nil
}

// replayAll replays every task with the model, one conversation each; the
// prompt names the folder the files are in.
func replayAll(ctx context.Context, rp *replayer, tools []apiTool, w *workspace, run toolRunner) ([]*replayed, error) {
	var all []*replayed
	for _, t := range tasks {
		r, err := rp.converse(ctx, tools, "The files are in "+w.files+". "+t.prompt, run)
		if err != nil {
			return nil, fmt.Errorf("replaying %s with %s: %w", t.name, rp.model, err)
		}
		all = append(all, &r)
	}
	return all, nil
}

// runPython calls run_python and returns the text a model reads (a failed
// run's traceback included), whether an image came back, and the image's
// tokens as Anthropic counts them (width × height / 750).
func runPython(ctx context.Context, cs *mcp.ClientSession, args map[string]any) (string, bool, int, error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		return "", false, 0, fmt.Errorf("run_python: %w", err)
	}
	image, imgTok := false, 0
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			image = true
			if pc, err := png.DecodeConfig(bytes.NewReader(ic.Data)); err == nil {
				imgTok += pc.Width * pc.Height / 750
			}
		}
	}
	return contentText(res.Content), image, imgTok, nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
