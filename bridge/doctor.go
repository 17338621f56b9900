package bridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// DoctorOptions configure [Doctor].
type DoctorOptions struct {
	Logger *slog.Logger // nil discards
	Out    io.Writer    // the findings, one line each
}

// Finding levels of [Doctor].
const (
	findOK   = "ok"
	findWarn = "warn"
	findFail = "FAIL"
)

// finding is one check's result: what was checked, what was found and, for a
// problem, how to fix it.
type finding struct {
	level, check, detail, fix string
}

// Doctor checks what codebridge needs, in the order a run needs it, and
// prints one line per check with the fix for each problem: the container
// engine reachable, the sandbox image present, a sandbox container running
// Python with codebridge's limits, the config folder and every server file,
// every server starting and listing its tools, and the state directory. It
// returns [ErrProblems] when a check failed.
func Doctor(ctx context.Context, cfg settings.Config, opts DoctorOptions) error {
	logger := orDiscard(opts.Logger)
	var (
		mu    sync.Mutex
		found []finding
	)
	report := func(f finding) {
		mu.Lock()
		defer mu.Unlock()
		found = append(found, f)
		fmt.Fprintf(opts.Out, "%-4s  %-18s %s\n", f.level, f.check, f.detail)
		if f.fix != "" {
			fmt.Fprintf(opts.Out, "      %-18s fix: %s\n", "", f.fix)
		}
	}

	// The sandbox and the servers are independent: check them side by side,
	// the sandbox's findings first.
	var servers []finding
	var wg sync.WaitGroup
	wg.Go(func() { servers = doctorServers(ctx, cfg, logger) })
	for _, f := range doctorSandbox(ctx, cfg, logger) {
		report(f)
	}
	wg.Wait()
	for _, f := range servers {
		report(f)
	}
	report(doctorStateDir(cfg))

	failed := 0
	for _, f := range found {
		if f.level == findFail {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%w: %s found; fix what is listed above and run codebridge doctor again", ErrProblems, plural(failed, "problem"))
	}
	fmt.Fprintln(opts.Out, "\nno problem found: agents can use codebridge.")
	return nil
}

// doctorSandbox checks the container engine, the image and a sandbox
// container.
func doctorSandbox(ctx context.Context, cfg settings.Config, logger *slog.Logger) []finding {
	// The container has everything a run has (the limits, the seccomp
	// profile, the helper module and code sent over the sandbox's stream),
	// without warm containers, sessions or preloads.
	cfg.WarmSandboxes, cfg.Sessions, cfg.Preload = 0, false, nil
	eng, err := newEngine(cfg, logger)
	if err != nil {
		return []finding{{findFail, "engine", err.Error(), ""}}
	}
	ct := withEngine(cfg, eng, logger)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		ct.Close(cctx)
	}()

	start := time.Now()
	info, err := eng.Describe(ctx)
	check := strings.ToLower(info.Name)
	if err != nil {
		return []finding{
			{findFail, check, err.Error(), info.Fix},
			{findFail, "sandbox", "not checked: it needs " + info.Name, ""},
		}
	}
	var out []finding
	out = append(out, finding{findOK, check, fmt.Sprintf("%s %s at %s (%s), answered in %s", info.Name, info.Version, info.Endpoint, info.Via, since(start)), ""})

	img := cfg.Image
	if img == "" {
		img = confine.DefaultImage
	}
	ok, err := eng.HasImage(ctx, img)
	switch {
	case err != nil:
		out = append(out, finding{findFail, "image", err.Error(), "check that " + info.Name + " works: " + check + " images"})
	case !ok && cfg.Image != "":
		out = append(out, finding{findFail, "image", img + " (MCP_BRIDGE_IMAGE) is not there; the first run would try to pull it",
			info.Setup + " --image " + img + ", or set MCP_BRIDGE_IMAGE to an image with python3"})
	case !ok:
		out = append(out, finding{findFail, "image", img + " is not there; the first run would pull " + confine.FallbackImage + " instead, without the data libraries",
			info.Setup + " builds it"})
	default:
		out = append(out, finding{findOK, "image", img, ""})
	}
	if !ok {
		return append(out, finding{findFail, "sandbox", "not checked: it needs the image", ""})
	}

	start = time.Now()
	res, err := ct.Run(ctx, sandbox.Request{
		Program: python.Program{Code: kernelProbe, OutputLimit: cfg.OutputLimit},
		Host:    func(sandbox.SessionInfo) python.Host { return protocol.Server{Handler: host.NoServers} }, Timeout: cfg.Timeout,
	})
	switch {
	case err != nil:
		out = append(out, finding{findFail, "sandbox", err.Error(), ""})
	case res.Error != nil:
		out = append(out, finding{findFail, "sandbox", "a sandbox container did not run Python: " + res.Error.Message,
			info.Setup + " probes a container (and fixes Podman's runtime and rlimit defaults where that fails)"})
	default:
		first, kernel, _ := strings.Cut(strings.TrimSpace(res.Stdout), "\n")
		version, stream, _ := strings.Cut(strings.TrimPrefix(first, "ok "), " ")
		over := "over " + info.Name + "'s attach stream"
		if stream == "socket" {
			over = "over a unix socket"
		}
		out = append(out, finding{findOK, "sandbox", fmt.Sprintf("a container with codebridge's limits ran Python %s in %s, %s", version, since(start), over), ""})
		if stream != "socket" && cfg.SocketStream && info.SharesFiles {
			out = append(out, finding{findWarn, "sandbox", "the sandbox did not use its unix socket, so tool calls go through " + info.Name + "'s relay and are slower; codebridge's log (stderr) says why",
				"on an SELinux host, set MCP_BRIDGE_SANDBOX_STREAM=attach; otherwise check that the state directory is yours and not writable by others"})
		}
		out = append(out, doctorRuntime(cfg.Runtime, info, kernel))
		if info.Name == "Kubernetes" {
			res, err := ct.Run(ctx, sandbox.Request{
				Program: python.Program{Code: egressProbe, OutputLimit: cfg.OutputLimit},
				Host:    func(sandbox.SessionInfo) python.Host { return protocol.Server{Handler: host.NoServers} }, Timeout: cfg.Timeout,
			})
			if err == nil && res.Error != nil {
				err = errors.New(res.Error.Message)
			}
			out = append(out, egressFinding(res.Stdout, err))
		}
	}
	return out
}

// egressProbe is the code of doctor's network check on Kubernetes: it tries
// to connect to the cloud metadata address, a public address and the API
// server's service, at once, and prints "open ADDR" for each it connected
// to or "closed ADDR WHY" (a refusal counts as closed: a network plugin may
// enforce a policy by rejecting).
const egressProbe = `import os, socket, threading
targets = [('169.254.169.254', 80), ('1.1.1.1', 443)]
h, p = os.environ.get('KUBERNETES_SERVICE_HOST'), os.environ.get('KUBERNETES_SERVICE_PORT')
if h and p and p.isdigit():
    targets.append((h, int(p)))
lines = []
def probe(t):
    try:
        socket.create_connection(t, timeout=3).close()
        r = 'open'
    except OSError as e:
        r = 'closed %s' % type(e).__name__
    lines.append('%s %s:%d' % (r.split()[0], t[0], t[1]) + (' ' + r.split()[1] if ' ' in r else ''))
ts = [threading.Thread(target=probe, args=(t,)) for t in targets]
for t in ts: t.start()
for t in ts: t.join()
print('\n'.join(sorted(lines)))`

// egressFinding reports egressProbe's output: a sandbox pod that reached any
// address means the NetworkPolicy is not enforced.
func egressFinding(stdout string, err error) finding {
	if err != nil {
		return finding{findFail, "network", "the egress probe did not run in a sandbox pod: " + oneLine(err.Error()), ""}
	}
	var open, closed []string
	for line := range strings.Lines(stdout) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "open":
			open = append(open, f[1])
		case len(f) >= 2 && f[0] == "closed":
			closed = append(closed, f[1])
		}
	}
	switch {
	case len(open) > 0:
		return finding{findFail, "network", "a sandbox pod reached " + strings.Join(open, ", ") + ": the NetworkPolicy codebridge-sandbox-deny-all is not enforced, so code can reach the network (cloud metadata, the API server)",
			"use a network plugin that enforces NetworkPolicies (Calico, Cilium; flannel alone does not), and check that no other NetworkPolicy in the namespace allows traffic to pods labelled " + confine.LabelManaged + "=true"}
	case len(closed) == 0:
		return finding{findFail, "network", "the egress probe printed nothing a sandbox pod could or could not reach: " + oneLine(stdout), ""}
	}
	return finding{findOK, "network", "a sandbox pod reached none of " + strings.Join(closed, ", "), ""}
}

// kernelProbe is the code of doctor's sandbox run: Python's version and the
// stream, then the kernel the sandbox sees: its release and the first line
// of its log, which gVisor lets code read ("Starting gVisor...") and Linux
// does not.
const kernelProbe = `import ctypes, os, sys, codebridge_runner
print('ok', sys.version.split()[0], codebridge_runner.STREAM)
log = ''
try:
    buf = ctypes.create_string_buffer(4096)
    n = ctypes.CDLL(None).klogctl(3, buf, len(buf))  # SYSLOG_ACTION_READ_ALL
    log = buf.raw[:max(n, 0)].decode(errors='replace').split('\n')[0].split('] ', 1)[-1]
except Exception:
    pass
print(os.uname().release, log)`

// doctorRuntime reports the OCI runtime the sandbox ran under and what its
// kernel said (kernelProbe's last line: the release, then the first line of
// the kernel's log, if code may read it).
func doctorRuntime(asked string, info enginekit.Description, kernel string) finding {
	release, log, _ := strings.Cut(strings.TrimSpace(kernel), " ")
	gvisor := strings.Contains(log, "gVisor")
	name := cmp.Or(info.Runtime, "the engine's default runtime")
	switch {
	case gvisor && (confine.GVisor(asked) || info.Name == "Docker" && confine.GVisor(info.Runtime)):
		// Docker's driver takes a default runtime runsc as asked for.
		return finding{findOK, "runtime", fmt.Sprintf("%s: the sandbox runs on gVisor's kernel, not this host's (its log begins %q; uname says %s)", name, log, release), ""}
	case confine.GVisor(asked):
		return finding{findFail, "runtime", fmt.Sprintf("MCP_BRIDGE_RUNTIME=%s, but the sandbox ran on this host's Linux %s, not on gVisor (runtime %s)", asked, release, name),
			"codebridge setup --runtime runsc registers gVisor with " + info.Name + "; with CONTAINER_HOST set, that service must run it"}
	case gvisor:
		return finding{findWarn, "runtime", fmt.Sprintf("%s runs the sandbox on gVisor (its log begins %q), but MCP_BRIDGE_RUNTIME does not say so, and the sandbox's limits and seccomp profile are Linux's", name, log),
			"set MCP_BRIDGE_RUNTIME=runsc"}
	}
	return finding{findOK, "runtime", fmt.Sprintf("%s: the sandbox shares this host's Linux kernel (%s); MCP_BRIDGE_RUNTIME=runsc puts gVisor's between them", name, release), ""}
}

// doctorServers checks the config folder, every server file and every
// enabled server, which it starts (all at once) and asks for its tools.
func doctorServers(ctx context.Context, cfg settings.Config, logger *slog.Logger) []finding {
	if _, err := os.ReadDir(cfg.ConfigDir); errors.Is(err, os.ErrNotExist) {
		return []finding{{findWarn, "config", cfg.ConfigDir + " does not exist, so no MCP server is configured",
			"create it and add a JSON file with an \"mcpServers\" object (see the README's Configure servers)"}}
	} else if err != nil {
		return []finding{{findFail, "config", err.Error(), "make the folder readable, or set MCP_BRIDGE_CONFIG_DIR"}}
	}
	conf := discovery.Load(cfg.ConfigDir, nil, discovery.Options{AllowSelf: cfg.AllowSelf})
	var out []finding
	files := map[string]bool{}
	for _, s := range conf.Servers {
		files[s.Source] = true
	}
	out = append(out, finding{findOK, "config", fmt.Sprintf("%s: %s, %s", cfg.ConfigDir, plural(len(files), "file"), plural(len(conf.Servers), "server")), ""})
	for _, p := range conf.Problems {
		level := findFail
		if p.Warning {
			level = findWarn
		}
		out = append(out, finding{level, "config file", settings.ExplainProblem(p).String(), "edit " + filepath.Base(p.Path) + " as the message says"})
	}

	signIn := signInStates(cfg, conf.Servers)
	p, closePool := newListingPool(ctx, cfg, logger)
	defer closePool()
	p.Update(conf.Servers)
	results := make([]finding, len(conf.Servers))
	var wg sync.WaitGroup
	for i, s := range conf.Servers {
		check := "server " + s.Name
		if s.Disabled {
			results[i] = finding{findOK, check, "disabled in " + s.Source, ""}
			continue
		}
		wg.Go(func() {
			start := time.Now()
			tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			tools, err := p.Tools(tctx, s.Name)
			if isAuthRequired(err) {
				results[i] = finding{findFail, check, "needs a sign-in: " + signIn[s.Name], "run codebridge login " + s.Name}
				return
			}
			if err != nil {
				results[i] = finding{findFail, check, fmt.Sprintf("did not list its tools (%s): %s", since(start), oneLine(err.Error())),
					"check its entry in " + s.Source + "; run its command by hand to see it start"}
				return
			}
			detail := fmt.Sprintf("%s, listed in %s", plural(len(tools), "tool"), since(start))
			if st, ok := signIn[s.Name]; ok {
				detail += "; " + st
			}
			results[i] = finding{findOK, check, detail, ""}
		})
	}
	wg.Wait()
	sort.SliceStable(results, func(a, b int) bool { return results[a].check < results[b].check })
	return append(out, results...)
}

// doctorStateDir checks that the state directory is this user's alone and can be written.
func doctorStateDir(cfg settings.Config) finding {
	dir := cfg.StateDir
	if err := confine.OwnDir(dir); err != nil {
		return finding{findFail, "state", err.Error(), "fix it as it says, or set MCP_BRIDGE_STATE_DIR to a private folder of your own"}
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return finding{findFail, "state", err.Error(), "set MCP_BRIDGE_STATE_DIR to a folder codebridge can write"}
	}
	f.Close()
	os.Remove(f.Name())
	return finding{findOK, "state", dir + " is writable", ""}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func since(t time.Time) string {
	d := time.Since(t)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
