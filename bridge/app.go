package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/front"
	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/policy"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/bridge/server"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/bridge/stdio"
	"github.com/codebridge-mcp/codebridge/bridge/termtext"
	"github.com/codebridge-mcp/codebridge/bridge/typed"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/rawio"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// ServeOptions configure [Serve].
type ServeOptions struct {
	Logger  *slog.Logger
	Version string
	In      io.ReadCloser // the client's messages; nil means os.Stdin
	Out     io.Writer     // to the client; nil means os.Stdout
}

// Serve runs codebridge as an MCP server over stdio until the client closes its
// end or ctx ends. It returns only after every container and downstream server
// it started has stopped.
func Serve(ctx context.Context, cfg settings.Config, opts ServeOptions) error {
	logger := orDiscard(opts.Logger)
	in, out := opts.In, opts.Out
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	// The client's pipes, read and written through the poller, so that a
	// message arriving after a pause wakes one thread (package rawio).
	pin, undo := pollable(in)
	defer undo()
	in = pin.(io.ReadCloser)
	pout, undo := pollable(out)
	defer undo()
	out = pout.(io.Writer)
	rt, err := start(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer rt.close()
	srv := server.NewServer(cfg, server.Options{Runner: rt.sandbox, Logger: logger, Version: opts.Version, Servers: rt.dir,
		OnClient: rt.pool.SetClientCapabilities})
	logger.Info("serving MCP on stdio", "config_dir", cfg.ConfigDir)
	err = srv.Run(ctx, &stdio.Transport{Reader: in, Writer: out})
	if errors.Is(err, io.EOF) {
		err = nil
	}
	// The client is gone: its sandbox session ends before the sandbox closes.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return errors.Join(err, srv.Close(cctx))
}

// pollable returns, for a pipe or socket file x, a file for its descriptor
// that Go's poller waits on (rawio.Pollable), with a func that closes that
// file and puts the descriptor's mode back; else x itself.
func pollable(x any) (any, func()) {
	f, ok := x.(*os.File)
	if !ok {
		return x, func() {}
	}
	p, restore := rawio.Pollable(f)
	if p == f {
		return f, restore
	}
	return p, func() {
		p.Close() // a second Close, after the connection's, only says so
		restore()
	}
}

// ExecOptions configure [Exec].
type ExecOptions struct {
	Logger  *slog.Logger
	Timeout time.Duration
	Stdout  io.Writer
	Stderr  io.Writer
}

// Exec runs code once in the sandbox, as `codebridge exec` does, copying its
// output to opts.Stdout and opts.Stderr. It returns the code's exit status, or
// 1 when the code did not exit by itself (an exception, the time limit, a
// crash without status); the error is for codebridge's own failures, such as a
// sandbox that cannot start (the status is 1 then too).
func Exec(ctx context.Context, cfg settings.Config, code string, opts ExecOptions) (int, error) {
	logger := orDiscard(opts.Logger)
	cfg.WarmSandboxes = 0 // one run: nothing to start ahead of time
	cfg.Preload = nil
	rt, err := start(ctx, cfg, logger)
	if err != nil {
		return 1, err
	}
	defer rt.close()
	prog := python.Program{Code: code, OutputLimit: cfg.OutputLimit}
	if prog.Servers, err = rt.dir.Prepare(ctx, nil); err != nil {
		return 1, err
	}
	att := host.NewAttachments(cfg)
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = cfg.Timeout
	}
	out, err := rt.sandbox.Run(ctx, sandbox.Request{Program: prog, Host: func(run sandbox.SessionInfo) python.Host {
		return att.Host(rt.dir.Host(host.Run{Session: run.ID, Run: run.Run}))
	}, Timeout: timeout})
	if err != nil {
		return 1, err
	}
	res := out.Result
	io.WriteString(opts.Stdout, res.Stdout)
	io.WriteString(opts.Stderr, res.Stderr)
	if _, kept, dropped, more := att.Contents(); len(kept)+len(dropped) > 0 {
		for _, a := range kept {
			fmt.Fprintf(opts.Stderr, "codebridge: the run returned %s %q (%s, %s), which exec does not show: an MCP client receives it from run_python\n",
				a.Kind, a.Name, a.MIMEType, host.ByteSize(a.Bytes))
		}
		for _, d := range dropped {
			fmt.Fprintf(opts.Stderr, "codebridge: %s %q not returned: %s\n", d.Kind, d.Name, d.Reason)
		}
		if more > 0 {
			fmt.Fprintf(opts.Stderr, "codebridge: and %d more not returned\n", more)
		}
	}
	if f := res.Error; f != nil {
		if f.Kind == protocol.FailUnavailable {
			return 1, errors.New(f.Message)
		}
		msg := f.Traceback
		if msg == "" {
			msg = f.Message + "\n"
		}
		fmt.Fprint(opts.Stderr, msg)
		if res.ExitCode <= 0 { // -1: no status of its own; not 255 from os.Exit(-1)
			return 1, nil
		}
	}
	return res.ExitCode, nil
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// HTTPOptions configure [ListenAndServe].
type HTTPOptions = front.HTTPOptions

// ListenAndServe serves MCP over streamable HTTP on cfg.HTTP until ctx ends
// (see bridge/front). It returns only after every container and downstream
// server it started has stopped.
func ListenAndServe(ctx context.Context, cfg settings.Config, opts HTTPOptions) error {
	logger := orDiscard(opts.Logger)
	return front.ListenAndServe(ctx, cfg, func(ctx context.Context) (front.Backend, error) {
		rt, err := start(ctx, cfg, logger)
		if err != nil {
			return front.Backend{}, err
		}
		name, _ := ChooseEngine(cfg)
		return front.Backend{Runner: rt.sandbox, Servers: rt.dir, Close: rt.close, Ready: rt.sandbox.Ready, Engine: name,
			OnClient: rt.pool.SetClientCapabilities}, nil
	}, opts)
}

// ListOptions configure [ListServers].
type ListOptions struct {
	Logger *slog.Logger
	Tools  bool // start every server and list its tools
	Out    io.Writer
}

// ErrProblems is what [ListServers] returns, wrapped, when it listed problems:
// a configuration file it could not use, or a server that failed to start.
var ErrProblems = errors.New("problems listed")

// ListServers prints the configured servers, as `codebridge servers` does: name,
// transport, state and source file, then any configuration problems. With
// opts.Tools it starts each server (in parallel) and lists its tools. When it
// printed a problem, it returns an error matching [ErrProblems] that counts
// them.
func ListServers(ctx context.Context, cfg settings.Config, opts ListOptions) error {
	logger := orDiscard(opts.Logger)
	conf := discovery.Load(cfg.ConfigDir, nil, discovery.Options{AllowSelf: cfg.AllowSelf})
	p, closePool := newListingPool(ctx, cfg, logger)
	defer closePool()
	p.Update(conf.Servers)

	var tools map[string][]*mcp.Tool
	if opts.Tools {
		tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		tools, _ = p.AllTools(tctx, host.SearchParallelism)
		cancel()
	}
	status := p.Status()
	// Server names and sources come from config files (perhaps imported from
	// a project), tools and errors from the servers: every one escaped, so
	// none can forge a line or send the terminal commands.
	cell := termtext.Line
	if len(conf.Servers) == 0 {
		fmt.Fprintf(opts.Out, "no servers configured in %s: add a JSON file with an \"mcpServers\" object there\n", cfg.ConfigDir)
	} else {
		w := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(w, "SERVER\tTRANSPORT\tSTATE\tSOURCE\n")
		for _, st := range status {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", cell(st.Name), st.Transport, st.State, cell(st.Source))
		}
		w.Flush()
	}
	if states := signInStates(cfg, conf.Servers); len(states) > 0 {
		fmt.Fprintf(opts.Out, "\nsign-in (OAuth; codebridge login NAME, codebridge logout NAME):\n")
		w := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
		for _, st := range status {
			if state, ok := states[st.Name]; ok {
				fmt.Fprintf(w, "  %s\t%s\n", cell(st.Name), cell(state))
			}
		}
		w.Flush()
	}
	for _, st := range status {
		if st.Err != "" {
			fmt.Fprintf(opts.Out, "\n%s failed:\n  %s\n", cell(st.Name), strings.ReplaceAll(termtext.Lines(strings.TrimSpace(st.Err)), "\n", "\n  "))
		}
	}
	fmt.Fprintf(opts.Out, "\nsandbox engine: %s\n", EngineChoice(cfg))
	if opts.Tools {
		policies := map[string]*policy.Policy{}
		states := map[string][]manifest.State{}
		store := manifest.New(manifest.Dir(cfg.StateDir))
		for _, srv := range conf.Servers {
			policies[srv.Name] = policy.New(cfg.Tools, srv)
			pins, _, _ := store.LoadPins(srv.Name)
			states[srv.Name] = pins.States(tools[srv.Name])
		}
		for _, st := range status {
			if len(tools[st.Name]) == 0 {
				continue
			}
			fmt.Fprintf(opts.Out, "\n%s:\n", cell(st.Name))
			for i, t := range tools[st.Name] {
				mark := ""
				switch p := policies[st.Name]; {
				case p.Blocked(st.Name, t) != "":
					mark = "[blocked by policy] "
				case p.Confirm(t) != "":
					mark = "[asks first] "
				}
				if states[st.Name][i].Held(cfg.QuarantineNew) {
					mark += "[quarantined: codebridge tools review " + shellWord(st.Name) + "] "
				}
				fmt.Fprintf(opts.Out, "  %-32s %s%s\n", cell(t.Name), mark, cell(typed.FirstLine(t.Description)))
			}
		}
	}
	if opts.Tools && len(conf.Problems) == 0 {
		// Only when every file loaded: a server in a broken file keeps its
		// manifest until the file is fixed.
		removed, err := manifest.New(manifest.Dir(cfg.StateDir)).Prune(conf.Servers)
		if err != nil {
			logger.Warn("removing the saved tool lists of servers no longer configured", "err", err)
		}
		if len(removed) > 0 {
			sort.Strings(removed)
			fmt.Fprintf(opts.Out, "\nremoved the saved tool lists of servers no longer configured: %s\n", cell(strings.Join(removed, ", ")))
		}
	}
	if len(conf.Problems) > 0 {
		fmt.Fprintf(opts.Out, "\nproblems in %s:\n", cfg.ConfigDir)
		for _, prob := range conf.Problems {
			fmt.Fprintf(opts.Out, "  %s\n", cell(settings.ExplainProblem(prob).String()))
		}
	}
	var found []string
	if n := len(conf.Problems); n > 0 {
		found = append(found, fmt.Sprintf("%s in the files of %s", plural(n, "problem"), cfg.ConfigDir))
	}
	failed := 0
	for _, st := range status {
		if st.Err != "" {
			failed++
		}
	}
	if failed > 0 {
		found = append(found, fmt.Sprintf("%s failed to start", plural(failed, "server")))
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: %s; fix what is listed above and run it again", ErrProblems, strings.Join(found, ", "))
	}
	return nil
}

// newListingPool is the pool of a command that starts servers to list their
// tools (servers --tools, doctor): every list is saved as the server's
// manifest, for the next codebridge to answer docs and search from, and
// checked against the server's pins (host.CheckPins). The returned func
// stops the servers, giving them 10 s even after ctx ended.
func newListingPool(ctx context.Context, cfg settings.Config, logger *slog.Logger) (*pool.Pool, func()) {
	store := manifest.New(manifest.Dir(cfg.StateDir))
	auditLog := newAuditLog(cfg, logger)
	p := pool.New(pool.Options{Logger: logger, OnTools: func(def *discovery.Server, tools []*mcp.Tool) {
		if err := store.Save(def, tools); err != nil {
			logger.Warn("saving a server's tool list", "server", def.Name, "err", err)
		}
		host.CheckPins(store, auditLog, cfg.QuarantineNew, def.Name, tools, logger)
	}, OAuth: oauthHandlers(cfg, logger)})
	return p, func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		p.Close(cctx)
		auditLog.Close(cctx)
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
